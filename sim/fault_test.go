package sim

import (
	"testing"
)

func TestFaultValidate(t *testing.T) {
	tests := []struct {
		name     string
		f        Fault
		wantPath string // "" when valid
	}{
		{"zero is none", Fault{}, ""},
		{"none", Fault{Mode: FaultNone}, ""},
		{"down", Fault{Mode: FaultDown}, ""},
		{"overloaded", Fault{Mode: FaultOverloaded}, ""},
		{"slow default factor", Fault{Mode: FaultSlow}, ""},
		{"slow negative", Fault{Mode: FaultSlow, Factor: -2}, "factor"},
		{"stall", Fault{Mode: FaultStallStream, After: 1}, ""},
		{"drop negative after", Fault{Mode: FaultDropStream, After: -1}, "after"},
		{"quota rpm", Fault{Mode: FaultQuota, RPM: 6}, ""},
		{"quota nothing", Fault{Mode: FaultQuota}, "rpm"},
		{"quota negative", Fault{Mode: FaultQuota, TPM: -1}, "rpm"},
		{"error rate", Fault{Mode: FaultErrorRate, Rate: 0.3}, ""},
		{"error rate above 1", Fault{Mode: FaultErrorRate, Rate: 1.5}, "rate"},
		{"error rate bad status", Fault{Mode: FaultErrorRate, Rate: 0.5, Status: 502}, "status"},
		{"unknown", Fault{Mode: "meltdown"}, "mode"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.f.validate()
			if tc.wantPath == "" {
				if err != nil {
					t.Errorf("validate = %v, want nil", err)
				}
				return
			}
			fe, ok := err.(*FieldError)
			if !ok || fe.Path != tc.wantPath {
				t.Errorf("validate = %v, want *FieldError at %q", err, tc.wantPath)
			}
		})
	}
}

func TestFaultDefaults(t *testing.T) {
	tests := []struct {
		name string
		in   Fault
		want Fault
	}{
		{"empty is none", Fault{}, Fault{Mode: FaultNone}},
		{"slow", Fault{Mode: FaultSlow}, Fault{Mode: FaultSlow, Factor: DefaultSlowFactor}},
		{"stall", Fault{Mode: FaultStallStream}, Fault{Mode: FaultStallStream, After: DefaultStreamAfter}},
		{"drop keeps after", Fault{Mode: FaultDropStream, After: 1}, Fault{Mode: FaultDropStream, After: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.in.withDefaults(); got != tc.want {
				t.Errorf("withDefaults = %+v, want %+v", got, tc.want)
			}
		})
	}
}
