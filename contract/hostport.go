package contract

import (
	"fmt"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// MaxHostPorts is the most host ports one runner's reservation holds (the
// annotation, defaultHostPorts, a record): its author's choice otherwise,
// and each one is a port of the node held, and read by every Filter of a
// pod with host ports on the node.
const MaxHostPorts = 16

// MaxStaleWorkflowPods is the most pods of an earlier runner of the same
// name a reservation records as not its workflow pod: anyone who may create
// pods in the namespace can label as many as they like, and the record
// must fit the Binding.
const MaxStaleWorkflowPods = 16

// HostPort is a host port a workflow pod will use, as written in
// defaultHostPorts, in HostPortsAnnotation and in a recorded reservation:
// "6379", "5432/TCP", "53/UDP".
type HostPort struct {
	Protocol v1.Protocol
	Port     int32
}

// String formats the port as ParseHostPort reads it.
func (p HostPort) String() string { return fmt.Sprintf("%d/%s", p.Port, p.Protocol) }

// ParseHostPort reads "PORT[/PROTOCOL]"; the protocol is TCP, UDP or SCTP
// (TCP when left out), the port 1 to 65535.
func ParseHostPort(s string) (HostPort, error) {
	s = strings.TrimSpace(s)
	number, protocol, hasProtocol := strings.Cut(s, "/")
	p := HostPort{Protocol: v1.ProtocolTCP}
	if hasProtocol {
		switch proto := v1.Protocol(strings.ToUpper(strings.TrimSpace(protocol))); proto {
		case v1.ProtocolTCP, v1.ProtocolUDP, v1.ProtocolSCTP:
			p.Protocol = proto
		default:
			return HostPort{}, fmt.Errorf("host port %q: protocol %q is not TCP, UDP or SCTP", s, protocol)
		}
	}
	n, err := strconv.ParseInt(strings.TrimSpace(number), 10, 32)
	if err != nil || n < 1 || n > 65535 {
		return HostPort{}, fmt.Errorf("host port %q: want a port from 1 to 65535, optionally /TCP, /UDP or /SCTP", s)
	}
	p.Port = int32(n)
	return p, nil
}
