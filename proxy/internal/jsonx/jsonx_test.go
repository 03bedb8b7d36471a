package jsonx

import "testing"

func TestRoundTrip(t *testing.T) {
	in := `{"a":12345678901234567890,"b":1.50,"c":"<&>","d":[null,true]}`
	v, err := Decode([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	out, err := Encode(v)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != in {
		t.Errorf("got %s, want %s", out, in)
	}
}

func TestDecodeErrors(t *testing.T) {
	for _, in := range []string{``, ` `, `{"a":1} {"b":2}`, `{"a":`, `{"a":1}x`} {
		if _, err := Decode([]byte(in)); err == nil {
			t.Errorf("Decode(%q): want an error", in)
		}
	}
}
