package api

import (
	"net/url"
	"reflect"
	"strings"
	"testing"
)

// fillParams sets every parameter field of the struct v to a value that is neither zero
// nor its default, each one different, and returns the parameters' names.
func fillParams(t *testing.T, v reflect.Value, seed *int) []string {
	var names []string
	for i := range v.NumField() {
		sf, f := v.Type().Field(i), v.Field(i)
		tag, ok := sf.Tag.Lookup("param")
		if tag == "-" {
			continue
		}
		if !ok {
			names = append(names, fillParams(t, f, seed)...)
			continue
		}
		*seed++
		switch f.Kind() {
		case reflect.String:
			f.SetString("v" + sf.Name + "|é&=" + strings.Repeat("x", *seed))
		case reflect.Int:
			f.SetInt(int64(1000 + *seed))
		case reflect.Uint32, reflect.Uint64:
			f.SetUint(uint64(2000 + *seed))
		case reflect.Float64:
			f.SetFloat(float64(*seed) + 0.25)
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Slice:
			f.Set(reflect.ValueOf([]string{"a" + sf.Name, "b"}))
		default:
			t.Fatalf("%s: field %s of kind %s", v.Type(), sf.Name, f.Kind())
		}
		name, _, _ := strings.Cut(tag, ",")
		names = append(names, name)
	}
	return names
}

// TestRequestsRoundTrip walks every field of every request: set to a value that is not
// its default, it is encoded as a parameter of its own and decoded back, so a field added
// to a request cannot be left out of the socket API (the fields of a request are its
// parameters, read by reflection).
func TestRequestsRoundTrip(t *testing.T) {
	for _, r := range Requests() {
		typ := reflect.TypeOf(r).Elem()
		seed := 0
		names := fillParams(t, reflect.ValueOf(r).Elem(), &seed)
		if len(names) == 0 {
			t.Errorf("%s has no parameters", typ)
		}
		q := r.Encode()
		seen := map[string]bool{}
		for _, n := range names {
			if seen[n] {
				t.Errorf("%s: two fields are parameter %s", typ, n)
			}
			seen[n] = true
			if q.Get(n) == "" {
				t.Errorf("%s: parameter %s not encoded (%v)", typ, n, q)
			}
		}
		if len(q) != len(names) {
			t.Errorf("%s: encoded %d parameters, want %d: %v", typ, len(q), len(names), q)
		}
		// Through the wire: as a query string.
		back, err := url.ParseQuery(q.Encode())
		if err != nil {
			t.Fatal(err)
		}
		got := reflect.New(typ)
		got.Elem().Set(reflect.ValueOf(r).Elem()) // the fields the path says
		zeroParams(got.Elem())
		if err := got.Interface().(Request).Decode(back); err != nil {
			t.Errorf("%s: decoding %v: %v", typ, back, err)
		}
		if !reflect.DeepEqual(got.Interface(), r) {
			t.Errorf("%s: decoded\\n%+v\\nwant\\n%+v", typ, got.Elem().Interface(), reflect.ValueOf(r).Elem().Interface())
		}
		if got.Interface().(Request).Path() != r.Path() {
			t.Errorf("%s: path %s after decoding, want %s", typ, got.Interface().(Request).Path(), r.Path())
		}
	}
}

// zeroParams zeroes the parameter fields of v, keeping those the path says.
func zeroParams(v reflect.Value) {
	for i := range v.NumField() {
		sf := v.Type().Field(i)
		tag, ok := sf.Tag.Lookup("param")
		switch {
		case tag == "-":
		case !ok:
			zeroParams(v.Field(i))
		default:
			v.Field(i).SetZero()
		}
	}
}

// TestRequestDefaults: a request decoded from no parameters holds its defaults, and
// encodes as none.
func TestRequestDefaults(t *testing.T) {
	var top TopRequest
	if err := top.Decode(url.Values{}); err != nil || top.N != 20 || top.Sort != "" || top.Tid != 0 {
		t.Errorf("top with no parameters: %+v (%v)", top, err)
	}
	var fl FlameRequest
	if err := fl.Decode(url.Values{}); err != nil || fl.Depth != 12 || fl.ThresholdPct != 1 {
		t.Errorf("flame with no parameters: %+v (%v)", fl, err)
	}
	if q := fl.Encode(); len(q) != 0 {
		t.Errorf("flame at its defaults encodes as %v", q)
	}
	// A value that is no default is sent, a zero one too.
	top.N = 0
	if q := top.Encode(); q.Get("n") != "0" {
		t.Errorf("top -n 0 encodes as %v", q)
	}
	// Empty parameters are absent ones.
	if err := fl.Decode(url.Values{"depth": {""}, "collapse_image": {"", "libc"}}); err != nil || fl.Depth != 12 || len(fl.Transform.CollapseImage) != 1 {
		t.Errorf("flame with empty parameters: %+v (%v)", fl, err)
	}
	var ca CallersRequest
	if err := ca.Decode(url.Values{"fn": {"main"}}); err != nil || ca.N != 20 || ca.Functions != 10 {
		t.Errorf("callers with fn alone: %+v (%v)", ca, err)
	}
	var g struct {
		NoInline bool `param:"inline,negated"`
	}
	g.NoInline = true
	if q := EncodeParams(g); q.Get("inline") != "0" || len(q) != 1 {
		t.Errorf("no inline encodes as %v", q)
	}
}

// TestRequestErrors: bad parameters are named, as the socket API always named them.
func TestRequestErrors(t *testing.T) {
	for _, c := range []struct {
		r    Request
		q    url.Values
		want []string
	}{
		{&TopRequest{}, url.Values{"n": {"x"}, "tid": {"-1"}}, []string{`parameter n: "x" is not a number`, `parameter tid: "-1" is not a number`}},
		{&TopRequest{}, url.Values{"pid": {"p"}}, []string{`parameter pid: "p" is not a process id`}},
		{&FlameRequest{}, url.Values{"threshold_pct": {"1%"}}, []string{`parameter threshold_pct: "1%" is not a number`}},
		{&CallersRequest{}, url.Values{}, []string{"parameter fn: give a function name or a regular expression"}},
		{&AnnotateRequest{}, url.Values{"version": {"v"}}, []string{"parameter target: give a function name or an address", `parameter version: "v" is not a number`}},
		{&WaitRequest{}, url.Values{"seconds": {"soon"}}, []string{`parameter seconds: "soon" is not a number`}},
	} {
		err := c.r.Decode(c.q)
		if err == nil {
			t.Errorf("%T %v: no error", c.r, c.q)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%T %v: error %q, want it to say %q", c.r, c.q, err, w)
			}
		}
	}
}

// FuzzDecodeParams: any query string decodes into any request without a panic, and what
// decoded encodes and decodes to the same request.
func FuzzDecodeParams(f *testing.F) {
	f.Add("n=5&sort=total&by=line&inline=0&short=1&tid=7&pid=9&comm=a&from=1&to=-2&span=s&focus=x&collapse_image=libc&collapse_image=&fold_recursion=1&off_cpu=1")
	f.Add("fn=main&functions=-3&n=99999999999999999999&threshold_pct=NaN&depth=1e3")
	f.Add("target=0x10&version=2&syntax=intel&bucket_ms=0.5&buckets=10&threads=2&stacks=-1&samples=1&seconds=inf")
	f.Fuzz(func(t *testing.T, s string) {
		q, err := url.ParseQuery(s)
		if err != nil {
			return
		}
		for _, r := range Requests() {
			if r.Decode(q) != nil {
				continue
			}
			again := reflect.New(reflect.TypeOf(r).Elem())
			again.Elem().Set(reflect.ValueOf(r).Elem())
			if err := again.Interface().(Request).Decode(r.Encode()); err != nil {
				t.Fatalf("%T: %v encoded as %v: %v", r, q, r.Encode(), err)
			}
			if !reflect.DeepEqual(fmtReq(again.Interface()), fmtReq(r)) {
				t.Fatalf("%T: %v: %+v decodes back as %+v", r, q, r, again.Interface())
			}
		}
	})
}

// fmtReq writes a request for comparison (NaN is not equal to itself).
func fmtReq(r any) string { return EncodeParams(r).Encode() }
