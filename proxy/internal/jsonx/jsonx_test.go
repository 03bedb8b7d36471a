package jsonx

import (
	"encoding/json"
	"testing"
)

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

func TestMembersAndElements(t *testing.T) {
	out, err := Members([]byte(`{"b":1, "a":{"x":2},"drop":true,"c":[1,2]}`+"\n"), func(key string, raw json.RawMessage) (json.RawMessage, error) {
		switch key {
		case "drop":
			return nil, nil
		case "c":
			return Elements(raw, func(i int, raw json.RawMessage) (json.RawMessage, error) {
				if i == 0 {
					return nil, nil
				}
				return json.RawMessage(`"two"`), nil
			})
		}
		return raw, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"b":1,"a":{"x":2},"c":["two"]}` + "\n"; string(out) != want {
		t.Errorf("got %s, want %s", out, want)
	}
	keep := func(_ string, raw json.RawMessage) (json.RawMessage, error) { return raw, nil }
	for _, bad := range []string{``, `[]`, `{"a":1`, `{"a":1}{}`, `{"a":}`} {
		if _, err := Members([]byte(bad), keep); err == nil {
			t.Errorf("Members(%q): want an error", bad)
		}
	}
	if _, err := Elements([]byte(`{}`), func(int, json.RawMessage) (json.RawMessage, error) { return nil, nil }); err == nil {
		t.Error("Elements of an object: want an error")
	}
}
