package egress

// A CA handed to the process that serves a session's gateway.

import (
	"crypto/ecdsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
)

// KeyPEM returns the CA's private key in PEM (PKCS #8), for the one
// process that serves the sandbox's gateway after its maker (a session's
// keeper): handed over a pipe, never written anywhere.
func (ca *CA) KeyPEM() ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(ca.key)
	if err != nil {
		return nil, fmt.Errorf("encoding the CA's key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// ParseCA returns the CA of certPEM and keyPEM (CertPEM's and KeyPEM's).
func ParseCA(certPEM, keyPEM []byte) (*CA, error) {
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return nil, errors.New("the CA handed on is not PEM")
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parsing the CA handed on: %w", err)
	}
	k, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
	key, ok := k.(*ecdsa.PrivateKey)
	if err != nil || !ok || !key.PublicKey.Equal(cert.PublicKey) {
		return nil, errors.Join(errors.New("the CA's key handed on is not its certificate's"), err)
	}
	return &CA{cert: cert, key: key, pem: pem.EncodeToMemory(cb), leaves: map[string]*tls.Certificate{}}, nil
}
