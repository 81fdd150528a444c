package api

// Event is the event a view counts, of a run that lists its events (stax record -e): its
// samples are the event's, each standing for Weight events (its fixed period, or in
// frequency mode the mean of its samples' periods).
type Event struct {
	Name   string  `json:"name"`
	Period uint64  `json:"period,omitempty"`
	Freq   int     `json:"freq,omitempty"`
	Weight float64 `json:"weight"`
	// Of is how many events the run sampled.
	Of int `json:"of"`
}
