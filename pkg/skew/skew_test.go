package skew

import (
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		build, server string
		ok            bool
	}{
		{"v1.35.4", "v1.35.0", true},
		{"v1.35.4", "v1.36.3", true},
		{"v1.35.4", "v1.36.0-rc.1+0123abc", true},
		{"v1.35.4", "v1.37.2", false},
		{"v1.35.4", "v1.34.4", false},
		{"v1.35.4", "v2.35.0", false},
		{"v1.37.2", "v1.37.2-eks-1234", true},
		{"v0.0.0-master+$Format:%H$", "v1.30.0", true},
	} {
		err := Check(tc.build, tc.server)
		if (err == nil) != tc.ok {
			t.Errorf("Check(%s, %s) = %v, want ok %v", tc.build, tc.server, err, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "outside the version-skew policy") {
			t.Errorf("Check(%s, %s) = %v, want it to say the skew policy", tc.build, tc.server, err)
		}
	}
	if err := Check("v1.35.4", "nonsense"); err == nil || !strings.Contains(err.Error(), "kube-apiserver's version") {
		t.Errorf("Check with an unreadable server version = %v, want an error naming it", err)
	}
}
