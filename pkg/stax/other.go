//go:build !linux

package stax

type writer struct{}

func startWatch()       { state.Store(stateOff) }
func begin(string) Span { return Span{} }
func end(Span)          {}
func mark(string)       {}
