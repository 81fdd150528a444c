package push

import (
	"bytes"
	"fmt"
	"mime/multipart"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/pprof/profile"
)

// PyroscopeRequest is Pyroscope's ingest request for a window: POST
// /ingest?name=SERVICE{LABELS}&from=&until=&format=pprof&sampleRate=HZ&spyName=stax with a
// multipart/form-data body whose "profile" field is the gzip'd pprof profile.
func PyroscopeRequest(p *profile.Profile, service string, labels map[string]string, from, until time.Time, hz int) (Request, error) {
	var pb bytes.Buffer
	if err := p.Write(&pb); err != nil {
		return Request{}, fmt.Errorf("encode pprof: %w", err)
	}
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, err := mw.CreateFormFile("profile", "profile.pprof")
	if err != nil {
		return Request{}, err
	}
	fw.Write(pb.Bytes())
	if err := mw.Close(); err != nil {
		return Request{}, err
	}
	q := url.Values{}
	q.Set("name", pyroscopeName(service, labels))
	q.Set("from", strconv.FormatInt(from.Unix(), 10))
	q.Set("until", strconv.FormatInt(max(until.Unix(), from.Unix()+1), 10))
	q.Set("format", "pprof")
	q.Set("spyName", "stax")
	if hz > 0 {
		q.Set("sampleRate", strconv.Itoa(hz))
	}
	return Request{Path: "/ingest?" + q.Encode(), ContentType: mw.FormDataContentType(), Body: body.Bytes()}, nil
}

// pyroscopeName is "service{k=v,...}", labels sorted; characters Pyroscope's name syntax
// reserves are replaced.
func pyroscopeName(service string, labels map[string]string) string {
	clean := strings.NewReplacer("{", "_", "}", "_", ",", "_", "=", "_")
	keys := make([]string, 0, len(labels))
	for k, v := range labels {
		if v != "" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString(clean.Replace(service))
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(clean.Replace(k) + "=" + clean.Replace(labels[k]))
	}
	b.WriteByte('}')
	return b.String()
}
