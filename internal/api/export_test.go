package api

import "reflect"

// Fill is fill, for the tests of the conversions that live beside their model, outside api
// (annotate_test.go).
func Fill(v reflect.Value, depth int) { fill(v, depth) }
