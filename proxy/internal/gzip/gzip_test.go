package gzip

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
)

func TestAccepts(t *testing.T) {
	for v, want := range map[string]bool{"gzip": true, "deflate, gzip": true, "gzip;q=1": false, "": false, "identity": false} {
		if got := Accepts(http.Header{"Accept-Encoding": {v}}); got != want {
			t.Errorf("Accepts(%q) = %v, want %v", v, got, want)
		}
	}
}

// response returns a response of body, of unknown length (a streamed list), gzip'ed if zipped.
func response(t *testing.T, body string, zipped bool) *http.Response {
	h := http.Header{}
	data := []byte(body)
	if zipped {
		var err error
		if data, err = Bytes(data); err != nil {
			t.Fatal(err)
		}
		h.Set("Content-Encoding", "gzip")
	}
	return &http.Response{StatusCode: http.StatusOK, Header: h, Body: io.NopCloser(bytes.NewReader(data)), ContentLength: -1}
}

func TestCompress(t *testing.T) {
	for _, size := range []int{10, threshold, threshold + 1, 3 * threshold} {
		body := strings.Repeat("x", size)
		resp := response(t, body, false)
		if err := Compress(resp); err != nil {
			t.Fatal(err)
		}
		zipped := resp.Header.Get("Content-Encoding") == "gzip"
		if zipped != (size > threshold) {
			t.Errorf("%d bytes: gzip'ed %v", size, zipped)
		}
		if err := Decompress(resp); err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err != nil || string(got) != body {
			t.Errorf("%d bytes: read back %d bytes, %v", size, len(got), err)
		}
	}
}

func TestPassThrough(t *testing.T) {
	plain := `{"kind":"SecretList","items":[` + strings.Repeat(`{"kind":"Secret"},`, 10000) + `{}]}`
	for body, wantPassed := range map[string]bool{
		plain: true,
		strings.Replace(plain, `{}`, `{"apiVersion":"cluster.hypershift.openshift.io/v1beta2"}`, 1): false,
	} {
		resp := response(t, body, true)
		passed, err := PassThrough(resp)
		if err != nil || passed != wantPassed {
			t.Fatalf("PassThrough = %v, %v; want %v", passed, err, wantPassed)
		}
		var r io.Reader = resp.Body
		if passed {
			if r, err = gzip.NewReader(r); err != nil {
				t.Fatal(err)
			}
		}
		if got, err := io.ReadAll(r); err != nil || string(got) != body {
			t.Errorf("passed %v: read back %d bytes, %v", passed, len(got), err)
		}
	}
}
