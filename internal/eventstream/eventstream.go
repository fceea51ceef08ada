// Package eventstream reads and writes the AWS event-stream binary framing
// (application/vnd.amazon.eventstream) in which Bedrock sends its streams
// (ConverseStream, InvokeModelWithResponseStream).
//
// A message is a prelude (total length, headers length, both big-endian
// uint32, and the CRC-32 of those 8 bytes), the headers, the payload and
// the CRC-32 of everything before it. A header is a name (1-byte length),
// a type byte and a value whose encoding the type gives.
package eventstream

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"time"
)

// Limits of the format: a message is at most 16 MiB, its headers at most
// 128 KiB (the AWS SDKs' bounds).
const (
	MaxMessageSize = 16 << 20
	MaxHeadersSize = 128 << 10
	preludeSize    = 12
	minMessageSize = preludeSize + 4
)

// ErrCRC is returned for a message whose prelude or message checksum does
// not match its bytes.
var ErrCRC = errors.New("eventstream: checksum mismatch")

// ErrFormat is wrapped by errors for malformed messages: impossible
// lengths, truncated or unknown header values.
var ErrFormat = errors.New("eventstream: malformed message")

// Header value types, as the format numbers them.
const (
	TypeBoolTrue  byte = 0
	TypeBoolFalse byte = 1
	TypeByte      byte = 2
	TypeInt16     byte = 3
	TypeInt32     byte = 4
	TypeInt64     byte = 5
	TypeBytes     byte = 6
	TypeString    byte = 7
	TypeTimestamp byte = 8
	TypeUUID      byte = 9
)

// Header is one header of a message. Value holds the value's bytes as
// they are framed, without the length of a bytes or string value: a
// string's text, an integer big-endian, a timestamp as milliseconds since
// the epoch (int64), nothing for the booleans.
type Header struct {
	Name  string
	Type  byte
	Value []byte
}

// String is a string header.
func String(name, v string) Header { return Header{Name: name, Type: TypeString, Value: []byte(v)} }

// Message is one event-stream message.
type Message struct {
	Headers []Header
	Payload []byte
}

// Get returns the value of the message's string (or bytes) header called
// name, "" when it has none.
func (m *Message) Get(name string) string {
	for _, h := range m.Headers {
		if h.Name == name && (h.Type == TypeString || h.Type == TypeBytes) {
			return string(h.Value)
		}
	}
	return ""
}

// fixedSize is the length of a value of type t with a fixed length, -1 for
// the types with a 2-byte length prefix.
func fixedSize(t byte) (int, error) {
	switch t {
	case TypeBoolTrue, TypeBoolFalse:
		return 0, nil
	case TypeByte:
		return 1, nil
	case TypeInt16:
		return 2, nil
	case TypeInt32:
		return 4, nil
	case TypeInt64, TypeTimestamp:
		return 8, nil
	case TypeUUID:
		return 16, nil
	case TypeBytes, TypeString:
		return -1, nil
	}
	return 0, fmt.Errorf("%w: unknown header type %d", ErrFormat, t)
}

// Encode appends m's framing to dst. It fails for headers whose names or
// values the format cannot hold and for messages over MaxMessageSize.
func Encode(dst []byte, m *Message) ([]byte, error) {
	hlen := 0
	for _, h := range m.Headers {
		if len(h.Name) == 0 || len(h.Name) > 255 {
			return dst, fmt.Errorf("%w: header name of %d bytes", ErrFormat, len(h.Name))
		}
		n, err := fixedSize(h.Type)
		if err != nil {
			return dst, err
		}
		switch {
		case n < 0 && len(h.Value) > 0xffff:
			return dst, fmt.Errorf("%w: header %q value of %d bytes", ErrFormat, h.Name, len(h.Value))
		case n < 0:
			n = 2 + len(h.Value)
		case len(h.Value) != n:
			return dst, fmt.Errorf("%w: header %q of type %d needs %d bytes, has %d", ErrFormat, h.Name, h.Type, n, len(h.Value))
		}
		hlen += 1 + len(h.Name) + 1 + n
	}
	total := minMessageSize + hlen + len(m.Payload)
	if hlen > MaxHeadersSize || total > MaxMessageSize {
		return dst, fmt.Errorf("%w: message of %d bytes", ErrFormat, total)
	}
	start := len(dst)
	dst = binary.BigEndian.AppendUint32(dst, uint32(total))
	dst = binary.BigEndian.AppendUint32(dst, uint32(hlen))
	dst = binary.BigEndian.AppendUint32(dst, crc32.ChecksumIEEE(dst[start:start+8]))
	for _, h := range m.Headers {
		dst = append(dst, byte(len(h.Name)))
		dst = append(dst, h.Name...)
		dst = append(dst, h.Type)
		if h.Type == TypeBytes || h.Type == TypeString {
			dst = binary.BigEndian.AppendUint16(dst, uint16(len(h.Value)))
		}
		dst = append(dst, h.Value...)
	}
	dst = append(dst, m.Payload...)
	return binary.BigEndian.AppendUint32(dst, crc32.ChecksumIEEE(dst[start:])), nil
}

// Decoder reads messages from a stream. It is not safe for concurrent
// use.
type Decoder struct {
	r   *bufio.Reader
	buf []byte
}

// NewDecoder returns a decoder reading from r.
func NewDecoder(r io.Reader) *Decoder { return &Decoder{r: bufio.NewReader(r)} }

// Decode reads the next message. It returns io.EOF at the end of the
// stream between messages, io.ErrUnexpectedEOF inside one, ErrCRC or an
// ErrFormat error for a damaged message. The message's slices are valid
// until the next call.
func (d *Decoder) Decode() (*Message, error) {
	var pre [preludeSize]byte
	if _, err := io.ReadFull(d.r, pre[:]); err != nil {
		return nil, err
	}
	total := binary.BigEndian.Uint32(pre[0:4])
	hlen := binary.BigEndian.Uint32(pre[4:8])
	if crc32.ChecksumIEEE(pre[:8]) != binary.BigEndian.Uint32(pre[8:12]) {
		return nil, fmt.Errorf("%w in the prelude", ErrCRC)
	}
	if total < minMessageSize || total > MaxMessageSize || hlen > MaxHeadersSize || hlen > total-minMessageSize {
		return nil, fmt.Errorf("%w: lengths %d and %d", ErrFormat, total, hlen)
	}
	if cap(d.buf) < int(total) {
		d.buf = make([]byte, total)
	}
	b := d.buf[:total]
	copy(b, pre[:])
	if _, err := io.ReadFull(d.r, b[preludeSize:]); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	if crc32.ChecksumIEEE(b[:total-4]) != binary.BigEndian.Uint32(b[total-4:]) {
		return nil, fmt.Errorf("%w in the message", ErrCRC)
	}
	hs, err := parseHeaders(b[preludeSize : preludeSize+hlen])
	if err != nil {
		return nil, err
	}
	return &Message{Headers: hs, Payload: b[preludeSize+hlen : total-4]}, nil
}

// parseHeaders parses a message's header bytes.
func parseHeaders(b []byte) ([]Header, error) {
	var hs []Header
	for len(b) > 0 {
		n := int(b[0])
		if n == 0 || len(b) < 1+n+1 {
			return nil, fmt.Errorf("%w: truncated header name", ErrFormat)
		}
		h := Header{Name: string(b[1 : 1+n]), Type: b[1+n]}
		b = b[2+n:]
		size, err := fixedSize(h.Type)
		if err != nil {
			return nil, err
		}
		if size < 0 {
			if len(b) < 2 {
				return nil, fmt.Errorf("%w: truncated header %q", ErrFormat, h.Name)
			}
			size = int(binary.BigEndian.Uint16(b))
			b = b[2:]
		}
		if len(b) < size {
			return nil, fmt.Errorf("%w: truncated header %q", ErrFormat, h.Name)
		}
		h.Value, b = b[:size:size], b[size:]
		hs = append(hs, h)
	}
	return hs, nil
}

// Timestamp is a timestamp header.
func Timestamp(name string, t time.Time) Header {
	return Header{Name: name, Type: TypeTimestamp, Value: binary.BigEndian.AppendUint64(nil, uint64(t.UnixMilli()))}
}
