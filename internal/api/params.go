package api

import (
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"strconv"
	"strings"
)

// The query parameters of a request are its fields' `param` tags, read by one codec
// (EncodeParams, DecodeParams) for every request, so that a field has one name on the CLI,
// the socket and the web page alike:
//
//	param:"name"           the parameter (a string, int, uint32, uint64, float64 or bool
//	                       field; a []string field is the parameter repeated)
//	param:"name,negated"   a bool that is true when the parameter is 0 (inline=0: no inline)
//	param:"-"              not a parameter (the request's path says it)
//	default:"V"            the value when the parameter is absent or empty
//	what:"a process id"    what a bad value is not ("a number" unless told)
//	required:"MSG"         the parameter must be given: "parameter name: MSG" otherwise
//
// A struct field without a param tag (Window, Transform, ...) holds more parameters.
// A bool is true when its parameter is 1. Encoding leaves out a field at its default, so
// that decoding what was encoded gives the request back.

// EncodeParams is the query parameters of the request v (a struct or a pointer to one).
func EncodeParams(v any) url.Values {
	q := url.Values{}
	walkParams(reflect.Indirect(reflect.ValueOf(v)), func(f reflect.Value, p param) error {
		if s := p.format(f); f.Kind() == reflect.Slice {
			for i := range f.Len() {
				q.Add(p.name, f.Index(i).String())
			}
		} else if s != p.def {
			q.Set(p.name, s)
		}
		return nil
	})
	return q
}

// DecodeParams sets the request *v from the query parameters q: each field from its
// parameter, or its default where q has none (or an empty one); fields that are no
// parameter are kept. Parameters v does not know are ignored. Its error names each bad
// parameter.
func DecodeParams(q url.Values, v any) error {
	return walkParams(reflect.ValueOf(v).Elem(), func(f reflect.Value, p param) error {
		if f.Kind() == reflect.Slice {
			var vs []string
			for _, s := range q[p.name] {
				if s != "" {
					vs = append(vs, s)
				}
			}
			f.Set(reflect.ValueOf(vs))
			return nil
		}
		s := q.Get(p.name)
		if s == "" {
			if p.required != "" {
				return fmt.Errorf("parameter %s: %s", p.name, p.required)
			}
			s = p.def
		}
		return p.parse(f, s)
	})
}

// param is one field's parameter, from its tags.
type param struct {
	name, def, what, required string
	negated                   bool
}

// walkParams calls fn on each parameter field of the struct v, in field order, and joins
// their errors.
func walkParams(v reflect.Value, fn func(reflect.Value, param) error) error {
	var errs []error
	t := v.Type()
	for i := range t.NumField() {
		sf := t.Field(i)
		tag, ok := sf.Tag.Lookup("param")
		if tag == "-" || !sf.IsExported() {
			continue
		}
		if !ok {
			if sf.Type.Kind() != reflect.Struct {
				panic(fmt.Sprintf("api: field %s.%s has no param tag", t.Name(), sf.Name))
			}
			errs = append(errs, walkParams(v.Field(i), fn))
			continue
		}
		name, opt, _ := strings.Cut(tag, ",")
		p := param{name: name, def: sf.Tag.Get("default"), what: sf.Tag.Get("what"), required: sf.Tag.Get("required"), negated: opt == "negated"}
		if p.what == "" {
			p.what = "a number"
		}
		if p.def == "" {
			p.def = p.format(reflect.Zero(sf.Type))
		}
		errs = append(errs, fn(v.Field(i), p))
	}
	return errors.Join(errs...)
}

// format writes f as its parameter's value.
func (p param) format(f reflect.Value) string {
	switch f.Kind() {
	case reflect.String:
		return f.String()
	case reflect.Int:
		return strconv.FormatInt(f.Int(), 10)
	case reflect.Uint32, reflect.Uint64:
		return strconv.FormatUint(f.Uint(), 10)
	case reflect.Float64:
		return strconv.FormatFloat(f.Float(), 'f', -1, 64)
	case reflect.Bool:
		if !f.Bool() {
			return ""
		}
		if p.negated {
			return "0"
		}
		return "1"
	case reflect.Slice:
		return ""
	}
	panic("api: parameter " + p.name + " of an unknown kind " + f.Kind().String())
}

// parse sets f from its parameter's value s.
func (p param) parse(f reflect.Value, s string) error {
	bad := func() error { return fmt.Errorf("parameter %s: %q is not %s", p.name, s, p.what) }
	switch f.Kind() {
	case reflect.String:
		f.SetString(s)
	case reflect.Int:
		n, err := strconv.Atoi(s)
		if err != nil {
			return bad()
		}
		f.SetInt(int64(n))
	case reflect.Uint32, reflect.Uint64:
		n, err := strconv.ParseUint(s, 10, f.Type().Bits())
		if err != nil {
			return bad()
		}
		f.SetUint(n)
	case reflect.Float64:
		n, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return bad()
		}
		f.SetFloat(n)
	case reflect.Bool:
		if p.negated {
			f.SetBool(s == "0")
		} else {
			f.SetBool(s == "1")
		}
	}
	return nil
}

// ParamNames is the names of the query parameters of the request v (a struct or a pointer
// to one), in field order.
func ParamNames(v any) []string {
	var names []string
	walkParams(reflect.Indirect(reflect.ValueOf(v)), func(_ reflect.Value, p param) error {
		names = append(names, p.name)
		return nil
	})
	return names
}
