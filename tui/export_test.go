package tui

import "testing"

func TestExportNameIsSanitised(t *testing.T) {
	for in, want := range map[string]string{
		"renewal-race":           "leaserace-renewal-race-20260314-150926",
		"../../etc/Passwd v2":    "leaserace-etc-passwd-v2-20260314-150926",
		"Ünïcode scenario_name!": "leaserace-n-code-scenario-name-20260314-150926",
		"":                       "leaserace-scenario-20260314-150926",
	} {
		if got := exportBase(in, fixedNow()); got != want {
			t.Errorf("exportBase(%q) = %q, want %q", in, got, want)
		}
	}
}
