package translate

import (
	"testing"
)

func TestGeminiSchema(t *testing.T) {
	for _, tc := range []struct {
		name     string
		in       string
		ordering bool
		want     string
	}{
		{"scalar types", `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"number"},"c":{"type":"integer"},"d":{"type":"boolean"}}}`, false,
			`{"type":"OBJECT","properties":{"a":{"type":"STRING"},"b":{"type":"NUMBER"},"c":{"type":"INTEGER"},"d":{"type":"BOOLEAN"}}}`},
		{"ordering follows the declaration", `{"type":"object","properties":{"z":{"type":"string"},"a":{"type":"string"}}}`, true,
			`{"type":"OBJECT","properties":{"z":{"type":"STRING"},"a":{"type":"STRING"}},"propertyOrdering":["z","a"]}`},
		{"explicit ordering kept", `{"type":"object","properties":{"z":{"type":"string"},"a":{"type":"string"}},"propertyOrdering":["a","z"]}`, true,
			`{"type":"OBJECT","properties":{"z":{"type":"STRING"},"a":{"type":"STRING"}},"propertyOrdering":["a","z"]}`},
		{"const", `{"const":"yes"}`, false, `{"type":"STRING","enum":["yes"]}`},
		{"null type alone", `{"type":"null"}`, false, `{"type":"NULL"}`},
		{"anyOf of several", `{"anyOf":[{"type":"string"},{"type":"integer"},{"type":"null"}],"description":"id"}`, false,
			`{"anyOf":[{"type":"STRING"},{"type":"INTEGER"}],"nullable":true,"description":"id"}`},
		{"ref with description beside it", `{"type":"object","properties":{"p":{"$ref":"#/definitions/P","description":"the p"}},"definitions":{"P":{"type":"string","description":"a P"}}}`, false,
			`{"type":"OBJECT","properties":{"p":{"type":"STRING","description":"the p"}}}`},
		{"same ref twice is not recursion", `{"type":"object","properties":{"a":{"$ref":"#/$defs/S"},"b":{"$ref":"#/$defs/S"}},"$defs":{"S":{"type":"string"}}}`, false,
			`{"type":"OBJECT","properties":{"a":{"type":"STRING"},"b":{"type":"STRING"}}}`},
		{"annotations dropped, constraints kept", `{"type":"string","$comment":"c","examples":["x"],"deprecated":true,"minLength":1,"maxLength":9,"pattern":"^[a-z]+$","default":"abc","example":"abc"}`, false,
			`{"type":"STRING","minLength":1,"maxLength":9,"pattern":"^[a-z]+$","default":"abc","example":"abc"}`},
		{"array bounds", `{"type":"array","items":{"type":"number","minimum":0.5},"minItems":1,"maxItems":3}`, false,
			`{"type":"ARRAY","items":{"type":"NUMBER","minimum":0.5},"minItems":1,"maxItems":3}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := geminiSchema([]byte(tc.in), "schema", tc.ordering)
			if err != nil {
				t.Fatal(err)
			}
			assertJSON(t, mustMarshal(got), tc.want)
		})
	}
}

func TestGeminiSchemaRefusals(t *testing.T) {
	for _, in := range []string{
		`{"type":"object","not":{"type":"string"}}`,
		`{"allOf":[{"type":"string"}]}`,
		`{"type":"array","prefixItems":[{"type":"string"}]}`,
		`{"type":"array","items":[{"type":"string"}]}`,
		`{"type":"number","multipleOf":2}`,
		`{"type":"number","exclusiveMinimum":0}`,
		`{"type":"array","uniqueItems":true}`,
		`{"type":"object","patternProperties":{"^x":{"type":"string"}}}`,
		`{"type":"object","additionalProperties":true}`,
		`{"type":"tuple"}`,
		`{"type":"integer","const":3}`,
		`{"type":"integer","enum":["a"]}`,
		`{"$ref":"#/$defs/missing"}`,
		`{"$ref":"#/$defs/S","minLength":2,"$defs":{"S":{"type":"string"}}}`,
	} {
		_, err := geminiSchema([]byte(in), "schema", true)
		if _, ok := err.(*UnsupportedError); !ok {
			t.Errorf("%s: err = %v, want an *UnsupportedError", in, err)
		}
	}
}

// TestGeminiSchemaRefBomb checks that $ref expansion is bounded: each level
// refers twice to the next, doubling the expanded size.
func TestGeminiSchemaRefBomb(t *testing.T) {
	defs := `"L0":{"type":"string"}`
	for i := 1; i <= 30; i++ {
		prev := "#/$defs/L" + itoa(i-1)
		defs += `,"L` + itoa(i) + `":{"type":"object","properties":{"a":{"$ref":"` + prev + `"},"b":{"$ref":"` + prev + `"}}}`
	}
	in := `{"$ref":"#/$defs/L30","$defs":{` + defs + `}}`
	_, err := geminiSchema([]byte(in), "schema", true)
	if _, ok := err.(*UnsupportedError); !ok {
		t.Fatalf("err = %v, want an *UnsupportedError", err)
	}
}
