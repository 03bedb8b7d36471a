package inprocess

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestStart(t *testing.T) {
	for name, breakOff := range map[string]func(*http.Request){
		"panic(http.ErrAbortHandler)": func(*http.Request) { panic(http.ErrAbortHandler) },
		"Abort":                       func(r *http.Request) { Abort(r, errors.New("the backend went away")) },
	} {
		t.Run(name, func(t *testing.T) {
			aborted := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusOK)
				_, _ = w.Write([]byte("part"))
				breakOff(r)
			})
			resp := Start(aborted, httptest.NewRequest(http.MethodGet, "/", nil))
			defer resp.Body.Close()
			buf := make([]byte, 100)
			n, _ := resp.Body.Read(buf)
			if string(buf[:n]) != "part" {
				t.Errorf("read %q", buf[:n])
			}
			if _, err := resp.Body.Read(buf); !errors.Is(err, ErrBrokenOff) {
				t.Errorf("after the abort: %v", err)
			}
		})
	}
	silent := Start(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), httptest.NewRequest(http.MethodGet, "/", nil))
	defer silent.Body.Close()
	if silent.Code != http.StatusOK {
		t.Errorf("a silent handler answered %d", silent.Code)
	}
}

func TestServe(t *testing.T) {
	rec, err := Serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusTeapot)
		_, _ = w.Write([]byte("short and stout"))
	}), httptest.NewRequest(http.MethodGet, "/", nil))
	if err != nil || rec.Code() != http.StatusTeapot || rec.Header().Get("Content-Type") != "text/plain" || rec.Body.String() != "short and stout" {
		t.Errorf("Serve = %d %v %q, %v", rec.Code(), rec.Header(), rec.Body.String(), err)
	}
	// A sub-request cloned from an abortable request has a place of its own: its abort is its own.
	outer, outerAborted := Abortable(httptest.NewRequest(http.MethodGet, "/", nil))
	_, err = Serve(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { Abort(r, errors.New("broken")) }), outer.Clone(outer.Context()))
	if !errors.Is(err, ErrBrokenOff) {
		t.Errorf("Serve of a handler that aborted: %v", err)
	}
	if err := outerAborted(); err != nil {
		t.Errorf("the outer request was aborted too: %v", err)
	}
	if _, err := Serve(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("a bug") }), httptest.NewRequest(http.MethodGet, "/", nil)); !errors.Is(err, ErrBrokenOff) {
		t.Errorf("Serve of a handler that panicked: %v", err)
	}
}
