package egress

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/x509"
	"encoding/pem"
	"sync"
	"testing"
	"time"
)

func TestNewCA(t *testing.T) {
	ca, err := NewCA()
	if err != nil {
		t.Fatalf("NewCA: %v", err)
	}
	block, rest := pem.Decode(ca.CertPEM())
	if block == nil || block.Type != "CERTIFICATE" || len(rest) != 0 {
		t.Fatalf("CertPEM = %q, want one CERTIFICATE block", ca.CertPEM())
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatalf("parsing CertPEM: %v", err)
	}
	now := time.Now()
	if cert.Subject.CommonName != "boxer per-run CA" || cert.Issuer.CommonName != "boxer per-run CA" {
		t.Errorf("subject %q issuer %q, want boxer per-run CA for both", cert.Subject.CommonName, cert.Issuer.CommonName)
	}
	if !cert.IsCA || !cert.BasicConstraintsValid || cert.MaxPathLen != 0 || !cert.MaxPathLenZero {
		t.Errorf("IsCA %v, MaxPathLen %d (zero %v), want a CA of path length 0", cert.IsCA, cert.MaxPathLen, cert.MaxPathLenZero)
	}
	if cert.KeyUsage != x509.KeyUsageCertSign {
		t.Errorf("KeyUsage = %v, want CertSign", cert.KeyUsage)
	}
	if d := cert.NotBefore.Sub(now.Add(-time.Hour)); d < -time.Minute || d > time.Minute {
		t.Errorf("NotBefore = %v, want an hour ago", cert.NotBefore)
	}
	if d := cert.NotAfter.Sub(now.Add(24 * time.Hour)); d < -time.Minute || d > time.Minute {
		t.Errorf("NotAfter = %v, want in a day", cert.NotAfter)
	}
	if pub, ok := cert.PublicKey.(*ecdsa.PublicKey); !ok || pub.Curve != elliptic.P256() {
		t.Errorf("public key %T, want ECDSA P-256", cert.PublicKey)
	}
	if len(cert.PermittedDNSDomains)+len(cert.ExcludedDNSDomains) != 0 {
		t.Errorf("name constraints %v %v, want none", cert.PermittedDNSDomains, cert.ExcludedDNSDomains)
	}
	// CertPEM is a copy: a caller cannot change the CA.
	ca.CertPEM()[0] = 'x'
	if ca.CertPEM()[0] != '-' {
		t.Error("CertPEM returned the CA's own bytes")
	}

	other, err := NewCA()
	if err != nil {
		t.Fatalf("NewCA: %v", err)
	}
	if string(other.CertPEM()) == string(ca.CertPEM()) {
		t.Error("two CAs share a certificate, want one each")
	}
}

func TestCALeaf(t *testing.T) {
	ca, err := NewCA()
	if err != nil {
		t.Fatalf("NewCA: %v", err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.CertPEM())
	var wg sync.WaitGroup
	certs := make([]any, 8)
	for i := range certs {
		wg.Go(func() {
			c, err := ca.leaf("api.test")
			if err != nil {
				t.Errorf("leaf: %v", err)
			}
			certs[i] = c
		})
	}
	wg.Wait()
	for _, c := range certs[1:] {
		if c != certs[0] {
			t.Fatal("leaf issued twice for one host, want it cached")
		}
	}
	leaf, _ := ca.leaf("api.test")
	cert := leaf.Leaf
	if _, err := cert.Verify(x509.VerifyOptions{DNSName: "api.test", Roots: roots}); err != nil {
		t.Errorf("verifying the leaf for api.test: %v", err)
	}
	if _, err := cert.Verify(x509.VerifyOptions{DNSName: "other.test", Roots: roots}); err == nil {
		t.Error("the leaf for api.test verifies for other.test")
	}
	if len(cert.DNSNames) != 1 || cert.DNSNames[0] != "api.test" || cert.IsCA {
		t.Errorf("leaf DNSNames %v IsCA %v, want [api.test], no CA", cert.DNSNames, cert.IsCA)
	}
	if len(cert.ExtKeyUsage) != 1 || cert.ExtKeyUsage[0] != x509.ExtKeyUsageServerAuth {
		t.Errorf("ExtKeyUsage = %v, want ServerAuth", cert.ExtKeyUsage)
	}
	if pub, ok := cert.PublicKey.(*ecdsa.PublicKey); !ok || pub.Curve != elliptic.P256() {
		t.Errorf("public key %T, want ECDSA P-256", cert.PublicKey)
	}
	if cert.NotAfter.After(ca.cert.NotAfter) || time.Until(cert.NotAfter) < 23*time.Hour {
		t.Errorf("NotAfter = %v, want about a day, not past the CA's %v", cert.NotAfter, ca.cert.NotAfter)
	}
	other, err := ca.leaf("other.test")
	if err != nil || other == leaf {
		t.Errorf("leaf(other.test) = %p, %v, want a certificate of its own", other, err)
	}
	var none *CA
	if _, err := none.leaf("api.test"); err == nil {
		t.Error("a nil CA issued a certificate")
	}
}

// TestCAHandoff: a CA parsed from its PEM issues leaves its certificate
// verifies, until the end it was made with.
func TestCAHandoff(t *testing.T) {
	end := time.Now().Add(48 * time.Hour).Truncate(time.Second)
	ca, err := NewCAUntil(end)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ca.KeyPEM()
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseCA(ca.CertPEM(), key)
	if err != nil {
		t.Fatal(err)
	}
	if !got.cert.NotAfter.Equal(end) {
		t.Errorf("NotAfter %v, want %v", got.cert.NotAfter, end)
	}
	leaf, err := got.leaf("api.example.com")
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.CertPEM())
	if _, err := leaf.Leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: "api.example.com"}); err != nil {
		t.Errorf("a leaf of the parsed CA: %v", err)
	}
	other, _ := NewCA()
	otherKey, _ := other.KeyPEM()
	if _, err := ParseCA(ca.CertPEM(), otherKey); err == nil {
		t.Errorf("a certificate with another CA's key was taken")
	}
}
