package translate

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
)

// ErrIncomplete is Scan's error for a value that data ends in the middle of: more input may complete it.
var ErrIncomplete = errors.New("unexpected end of JSON input")

// maxNestingDepth is encoding/json's: a document nested deeper is invalid.
const maxNestingDepth = 10000

// Scan validates the JSON value starting at data[i] (no leading whitespace) and returns the offset just
// after it, accepting exactly what encoding/json's scanner accepts (json.Valid): the grammar of RFC 8259,
// strings checked for control characters and escapes but not for UTF-8, nesting up to 10,000 levels. It
// returns ErrIncomplete when data ends inside the value (a number that reaches the end of data counts as
// complete: a caller reading a stream asks for more input when a number ends where data does), and another error, with the offset, for a byte that cannot be
// there. It does not allocate unless it fails; it is what the proxy's streams split lists and watches
// with, and what Valid runs first.
func Scan(data []byte, i int) (int, error) {
	return scanValue(data, i, 0)
}

func syntaxError(data []byte, i int, what string) error {
	if i >= len(data) {
		return ErrIncomplete
	}
	return fmt.Errorf("invalid character %q %s at offset %d", data[i], what, i)
}

func scanValue(data []byte, i, depth int) (int, error) {
	if i >= len(data) {
		return i, ErrIncomplete
	}
	switch c := data[i]; {
	case c == '{':
		return scanObject(data, i, depth+1)
	case c == '[':
		return scanArray(data, i, depth+1)
	case c == '"':
		return scanString(data, i)
	case c == '-' || '0' <= c && c <= '9':
		return scanNumber(data, i)
	case c == 't':
		return scanLiteral(data, i, "true")
	case c == 'f':
		return scanLiteral(data, i, "false")
	case c == 'n':
		return scanLiteral(data, i, "null")
	}
	return i, syntaxError(data, i, "looking for beginning of value")
}

func scanObject(data []byte, i, depth int) (int, error) {
	if depth > maxNestingDepth {
		return i, errors.New("exceeded max depth")
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return i + 1, nil
	}
	for {
		if i >= len(data) {
			return i, ErrIncomplete
		}
		if data[i] != '"' {
			return i, syntaxError(data, i, "looking for beginning of object key string")
		}
		end, err := scanString(data, i)
		if err != nil {
			return end, err
		}
		i = skipSpace(data, end)
		if i >= len(data) {
			return i, ErrIncomplete
		}
		if data[i] != ':' {
			return i, syntaxError(data, i, "after object key")
		}
		if i, err = scanValue(data, skipSpace(data, i+1), depth); err != nil {
			return i, err
		}
		i = skipSpace(data, i)
		if i >= len(data) {
			return i, ErrIncomplete
		}
		switch data[i] {
		case '}':
			return i + 1, nil
		case ',':
			i = skipSpace(data, i+1)
		default:
			return i, syntaxError(data, i, "after object key:value pair")
		}
	}
}

func scanArray(data []byte, i, depth int) (int, error) {
	if depth > maxNestingDepth {
		return i, errors.New("exceeded max depth")
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == ']' {
		return i + 1, nil
	}
	for {
		var err error
		if i, err = scanValue(data, i, depth); err != nil {
			return i, err
		}
		i = skipSpace(data, i)
		if i >= len(data) {
			return i, ErrIncomplete
		}
		switch data[i] {
		case ']':
			return i + 1, nil
		case ',':
			i = skipSpace(data, i+1)
		default:
			return i, syntaxError(data, i, "after array element")
		}
	}
}

// Eight bytes at a time (SWAR): the high bit of each byte of the result is set where a byte of x is a
// quote, a backslash or a control character (below 0x20); false positives above a true one do not matter,
// since the scan then goes byte by byte.
const (
	lows  = 0x0101010101010101
	highs = 0x8080808080808080
)

func special(x uint64) uint64 {
	quote := x ^ (lows * '"')
	backslash := x ^ (lows * '\\')
	return ((quote-lows)&^quote | (backslash-lows)&^backslash | (x-lows*0x20)&^x) & highs
}

// quoteOrBackslash is special without control characters: what ends a string or escapes, in a
// document already validated.
func quoteOrBackslash(x uint64) uint64 {
	quote := x ^ (lows * '"')
	backslash := x ^ (lows * '\\')
	return ((quote-lows)&^quote | (backslash-lows)&^backslash) & highs
}

// nextSpecial returns the offset of the first byte at or after j that special flags, eight bytes at a
// time while eight remain (the lowest flagged byte of a word is always a true one), then byte by byte;
// len(data) if there is none.
func nextSpecial(data []byte, j int) int {
	for ; j+8 <= len(data); j += 8 {
		if m := special(binary.LittleEndian.Uint64(data[j:])); m != 0 {
			return j + bits.TrailingZeros64(m)>>3
		}
	}
	for ; j < len(data); j++ {
		if c := data[j]; c == '"' || c == '\\' || c < 0x20 {
			return j
		}
	}
	return j
}

// scanString scans the string starting at data[i] (a '"').
func scanString(data []byte, i int) (int, error) {
	for j := i + 1; ; j++ {
		j = nextSpecial(data, j)
		if j >= len(data) {
			return len(data), ErrIncomplete
		}
		switch c := data[j]; {
		case c == '"':
			return j + 1, nil
		case c == '\\':
			j++
			if j >= len(data) {
				return j, ErrIncomplete
			}
			switch data[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				for k := 0; k < 4; k++ {
					j++
					if j >= len(data) {
						return j, ErrIncomplete
					}
					if !isHex(data[j]) {
						return j, syntaxError(data, j, "in \\u hexadecimal character escape")
					}
				}
			default:
				return j, syntaxError(data, j, "in string escape code")
			}
		default: // c < 0x20
			return j, syntaxError(data, j, "in string literal")
		}
	}
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// scanNumber scans the number starting at data[i] ('-' or a digit).
func scanNumber(data []byte, i int) (int, error) {
	j := i
	if data[j] == '-' {
		j++
	}
	digits := func(what string) error {
		if j >= len(data) {
			return ErrIncomplete
		}
		if data[j] < '0' || data[j] > '9' {
			return syntaxError(data, j, what)
		}
		for j < len(data) && '0' <= data[j] && data[j] <= '9' {
			j++
		}
		return nil
	}
	if j < len(data) && data[j] == '0' {
		j++
	} else if err := digits("in numeric literal"); err != nil {
		return j, err
	}
	if j < len(data) && data[j] == '.' {
		j++
		if err := digits("after decimal point in numeric literal"); err != nil {
			return j, err
		}
	}
	if j < len(data) && (data[j] == 'e' || data[j] == 'E') {
		j++
		if j < len(data) && (data[j] == '+' || data[j] == '-') {
			j++
		}
		if err := digits("in exponent of numeric literal"); err != nil {
			return j, err
		}
	}
	return j, nil
}

func scanLiteral(data []byte, i int, lit string) (int, error) {
	for k := 1; k < len(lit); k++ {
		if i+k >= len(data) {
			return i + k, ErrIncomplete
		}
		if data[i+k] != lit[k] {
			return i + k, syntaxError(data, i+k, "in literal "+lit+" (expecting "+fmt.Sprintf("%q", lit[k])+")")
		}
	}
	return i + len(lit), nil
}
