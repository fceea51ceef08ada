package eventstream

import (
	"bytes"
	"encoding/hex"
	"errors"
	"io"
	"testing"
	"time"
)

// TestEncodeKnownVector checks the framing against the empty message of
// the format's published test vectors (aws-c-event-stream's
// "no-op" message: a 16-byte message, no headers and no payload).
func TestEncodeKnownVector(t *testing.T) {
	got, err := Encode(nil, &Message{})
	if err != nil {
		t.Fatal(err)
	}
	if want := "0000001000000000" + "05c248eb" + "7d98c8ff"; hex.EncodeToString(got) != want {
		t.Fatalf("empty message = %x, want %s", got, want)
	}
}

func TestRoundTrip(t *testing.T) {
	cases := []struct {
		name string
		m    Message
	}{
		{"empty", Message{}},
		{"payload only", Message{Payload: []byte(`{"text":"hi"}`)}},
		{"bedrock event", Message{
			Headers: []Header{String(":event-type", "contentBlockDelta"), String(":content-type", "application/json"), String(":message-type", "event")},
			Payload: []byte(`{"contentBlockIndex":0,"delta":{"text":"Hello"}}`),
		}},
		{"every type", Message{Headers: []Header{
			{Name: "t", Type: TypeBoolTrue}, {Name: "f", Type: TypeBoolFalse},
			{Name: "b", Type: TypeByte, Value: []byte{7}}, {Name: "s", Type: TypeInt16, Value: []byte{1, 2}},
			{Name: "i", Type: TypeInt32, Value: []byte{1, 2, 3, 4}}, {Name: "l", Type: TypeInt64, Value: make([]byte, 8)},
			{Name: "y", Type: TypeBytes, Value: []byte{0, 1, 2}}, Timestamp("ts", time.UnixMilli(1700000000000)),
			{Name: "u", Type: TypeUUID, Value: bytes.Repeat([]byte{9}, 16)},
		}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, err := Encode(nil, &c.m)
			if err != nil {
				t.Fatal(err)
			}
			d := NewDecoder(bytes.NewReader(append(b, b...)))
			for range 2 {
				m, err := d.Decode()
				if err != nil {
					t.Fatal(err)
				}
				again, _ := Encode(nil, m)
				if !bytes.Equal(again, b) {
					t.Fatalf("re-encoded %x, want %x", again, b)
				}
			}
			if _, err := d.Decode(); err != io.EOF {
				t.Fatalf("after the last message: %v, want io.EOF", err)
			}
		})
	}
}

func TestDecodeDamaged(t *testing.T) {
	good, _ := Encode(nil, &Message{Headers: []Header{String(":event-type", "messageStop")}, Payload: []byte(`{"stopReason":"end_turn"}`)})
	flip := func(i int) []byte { b := bytes.Clone(good); b[i] ^= 1; return b }
	cases := []struct {
		name string
		in   []byte
		want error
	}{
		{"prelude crc", flip(9), ErrCRC},
		{"length changed", flip(3), ErrCRC},
		{"payload changed", flip(len(good) - 6), ErrCRC},
		{"message crc", flip(len(good) - 1), ErrCRC},
		{"truncated", good[:len(good)-3], io.ErrUnexpectedEOF},
		{"truncated prelude", good[:5], io.ErrUnexpectedEOF},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := NewDecoder(bytes.NewReader(c.in)).Decode()
			if !errors.Is(err, c.want) {
				t.Fatalf("err = %v, want %v", err, c.want)
			}
		})
	}
}

func TestEncodeRejects(t *testing.T) {
	cases := map[string]Message{
		"no name":          {Headers: []Header{{Type: TypeBoolTrue}}},
		"wrong int size":   {Headers: []Header{{Name: "i", Type: TypeInt32, Value: []byte{1}}}},
		"unknown type":     {Headers: []Header{{Name: "x", Type: 42}}},
		"string too long":  {Headers: []Header{{Name: "s", Type: TypeString, Value: make([]byte, 1<<16)}}},
		"payload too long": {Payload: make([]byte, MaxMessageSize)},
	}
	for name, m := range cases {
		if _, err := Encode(nil, &m); !errors.Is(err, ErrFormat) {
			t.Errorf("%s: err = %v, want ErrFormat", name, err)
		}
	}
}

// FuzzDecode feeds the decoder arbitrary bytes: it must not panic, and a
// message it accepts must encode back to the same bytes.
func FuzzDecode(f *testing.F) {
	for _, m := range []Message{{}, {Headers: []Header{String(":event-type", "chunk")}, Payload: []byte(`{"bytes":"e30="}`)}} {
		b, _ := Encode(nil, &m)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		d := NewDecoder(bytes.NewReader(in))
		off := 0
		for {
			m, err := d.Decode()
			if err != nil {
				return
			}
			b, err := Encode(nil, m)
			if err != nil {
				t.Fatalf("decoded message does not encode: %v", err)
			}
			if !bytes.Equal(b, in[off:off+len(b)]) {
				t.Fatalf("re-encoded %x, read %x", b, in[off:off+len(b)])
			}
			off += len(b)
		}
	})
}
