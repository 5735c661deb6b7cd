package egress

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"sync"
	"time"
)

const (
	// caName is the subject of every per-run CA: what a program that
	// prints its peer's issuer shows.
	caName = "boxer per-run CA"
	// certValidity is how long a run's certificates last: no run is
	// longer; a clock an hour behind still accepts them.
	certValidity = 24 * time.Hour
	certBackdate = time.Hour
)

// CA is a per-run certificate authority, in memory only: the proxy issues
// the certificates of the hosts it intercepts with it, and the sandbox
// trusts it (CertPEM) for that run alone.
type CA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte

	mu sync.Mutex
	// leaves holds the certificate issued for each host, made on first use.
	leaves map[string]*tls.Certificate
}

// NewCA makes a CA with a fresh P-256 key, valid from an hour ago for a
// day, that may sign leaf certificates only (path length 0).
func NewCA() (*CA, error) { return NewCAUntil(time.Now().Add(certValidity)) }

// NewCAUntil makes a CA as NewCA does, valid until end: a session's
// lives as long as the session may.
func NewCAUntil(end time.Time) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating the CA's key: %w", err)
	}
	now := time.Now()
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: caName},
		NotBefore:             now.Add(-certBackdate),
		NotAfter:              end,
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLen:            0,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("signing the CA's certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parsing the CA's certificate: %w", err)
	}
	return &CA{
		cert:   cert,
		key:    key,
		pem:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		leaves: map[string]*tls.Certificate{},
	}, nil
}

// CertPEM returns the CA's certificate (public) in PEM, for the sandbox's
// trust bundle.
func (ca *CA) CertPEM() []byte {
	return slices.Clone(ca.pem)
}

// leaf returns the certificate of host (a lower-case DNS name) signed by
// ca, issued on the first call and the same one after, until it is an
// hour from its end (a session's CA outlives its first leaves).
func (ca *CA) leaf(host string) (*tls.Certificate, error) {
	if ca == nil {
		return nil, errors.New("no CA to issue certificates with")
	}
	ca.mu.Lock()
	defer ca.mu.Unlock()
	if cert, ok := ca.leaves[host]; ok && time.Until(cert.Leaf.NotAfter) > certBackdate {
		return cert, nil
	}
	cert, err := ca.issue(host)
	if err != nil {
		return nil, err
	}
	ca.leaves[host] = cert
	return cert, nil
}

// issue makes a server certificate for host with a fresh P-256 key.
func (ca *CA) issue(host string) (*tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating a key for %s: %w", host, err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	notAfter := now.Add(certValidity)
	if notAfter.After(ca.cert.NotAfter) {
		// Some clients refuse a leaf that outlives its issuer.
		notAfter = ca.cert.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: host},
		DNSNames:     []string{host},
		NotBefore:    now.Add(-certBackdate),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return nil, fmt.Errorf("signing a certificate for %s: %w", host, err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parsing the certificate for %s: %w", host, err)
	}
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, nil
}

// newSerial returns a random 128-bit serial number, as RFC 5280 allows
// (at most 20 octets, positive).
func newSerial() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("generating a serial number: %w", err)
	}
	return n.Add(n, big.NewInt(1)), nil
}
