package node

import (
	"encoding/binary"
	"errors"
	"net"
	"strings"
)

// serveDNS answers the cluster DNS stand-in's queries (see svcProxy) until the socket closes.
func (p *svcProxy) serveDNS() {
	buf := make([]byte, 1500)
	for {
		n, from, err := p.dns.ReadFrom(buf)
		if err != nil {
			return
		}
		if resp, err := p.answer(buf[:n]); err == nil {
			_, _ = p.dns.WriteTo(resp, from)
		}
	}
}

const (
	dnsTypeA   = 1
	dnsClassIN = 1
	rcodeOK    = 0
	rcodeNX    = 3
)

// answer builds the reply to one query (RFC 1035 §4): an A record for a known
// <svc>.<ns>.svc.cluster.local, an empty NOERROR for its other types, NXDOMAIN otherwise.
func (p *svcProxy) answer(q []byte) ([]byte, error) {
	if len(q) < 12 || binary.BigEndian.Uint16(q[4:6]) != 1 {
		return nil, errors.New("not a single-question query")
	}
	var labels []string
	i := 12
	for {
		if i >= len(q) {
			return nil, errors.New("truncated name")
		}
		l := int(q[i])
		i++
		if l == 0 {
			break
		}
		if l > 63 || i+l > len(q) {
			return nil, errors.New("bad label")
		}
		labels = append(labels, strings.ToLower(string(q[i:i+l])))
		i += l
	}
	if i+4 > len(q) {
		return nil, errors.New("truncated question")
	}
	qtype, qclass := binary.BigEndian.Uint16(q[i:]), binary.BigEndian.Uint16(q[i+2:])
	question := q[12 : i+4]
	var ip net.IP
	rcode := rcodeNX
	if len(labels) == 5 && labels[2] == "svc" && labels[3] == "cluster" && labels[4] == "local" {
		if ip = p.lookup(labels[0], labels[1]); ip != nil {
			rcode = rcodeOK
		}
	}
	resp := make([]byte, 12, 12+len(question)+16)
	copy(resp, q[:2])                                         // ID
	flags := uint16(0x8000|0x0400|0x0080) | uint16(q[2]&1)<<8 // QR, AA, RA, RD copied
	binary.BigEndian.PutUint16(resp[2:], flags|uint16(rcode))
	binary.BigEndian.PutUint16(resp[4:], 1) // QDCOUNT
	resp = append(resp, question...)
	if ip != nil && qtype == dnsTypeA && qclass == dnsClassIN {
		binary.BigEndian.PutUint16(resp[6:], 1) // ANCOUNT
		resp = append(resp, 0xc0, 12)           // the question's name
		resp = binary.BigEndian.AppendUint16(resp, dnsTypeA)
		resp = binary.BigEndian.AppendUint16(resp, dnsClassIN)
		resp = binary.BigEndian.AppendUint32(resp, 5) // TTL
		resp = binary.BigEndian.AppendUint16(resp, 4)
		resp = append(resp, ip...)
	}
	return resp, nil
}
