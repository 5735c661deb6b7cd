package fleet

// The members' identity on the fleet listener: one Ed25519 key pair
// derived from the fleet key, in a self-signed certificate that both ends
// of every member-to-member connection present (mutual TLS 1.3). An end
// that shows another key, or none, is refused before a byte of a request
// is read or sent. A relay in between carries only ciphertext: it can
// neither read the hop nor answer in a member's place, as TLS 1.3 signs
// the handshake (both ends' fresh randoms included) with that key.

import (
	"bytes"
	"crypto/ed25519"
	"crypto/hkdf"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"time"
)

// identityInfo is HKDF's context for the members' key pair: it keeps the
// seed apart from every other use of the fleet key (IDs' MACs).
const identityInfo = "boxer fleet member TLS identity v1"

// identity is the members' shared key pair and certificate.
type identity struct {
	public ed25519.PublicKey
	cert   tls.Certificate
}

// newIdentity derives the members' key pair from the fleet key and makes
// its self-signed certificate.
func newIdentity(key []byte) (*identity, error) {
	seed, err := hkdf.Key(sha256.New, key, nil, identityInfo, ed25519.SeedSize)
	if err != nil {
		return nil, fmt.Errorf("deriving the fleet's key pair: %w", err)
	}
	priv := ed25519.NewKeyFromSeed(seed)
	pub := priv.Public().(ed25519.PublicKey)
	// No name and no expiry that matters: the certificate is checked by
	// its key alone, and the key lives as long as the fleet key.
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "boxer fleet member"},
		NotBefore:    time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC),
		NotAfter:     time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(nil, tmpl, tmpl, pub, priv)
	if err != nil {
		return nil, fmt.Errorf("making the fleet's certificate: %w", err)
	}
	return &identity{public: pub, cert: tls.Certificate{Certificate: [][]byte{der}, PrivateKey: priv}}, nil
}

// errNotMember is a peer whose certificate does not carry the fleet's key.
var errNotMember = errors.New("the peer does not hold the fleet key")

// verify accepts a connection only when the other end's certificate
// carries exactly the fleet's public key. TLS has already checked that
// the end holds the private key of the certificate it showed.
func (id *identity) verify(cs tls.ConnectionState) error {
	if len(cs.PeerCertificates) == 0 {
		return errNotMember
	}
	pub, ok := cs.PeerCertificates[0].PublicKey.(ed25519.PublicKey)
	if !ok || !bytes.Equal(pub, id.public) {
		return errNotMember
	}
	return nil
}

// serverTLS is the fleet listener's setting: TLS 1.3, a member's
// certificate required of the client.
func (id *identity) serverTLS() *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{id.cert},
		// Any certificate is taken by the handshake, then checked by its
		// key: there is no CA, the key is the membership.
		ClientAuth:       tls.RequireAnyClientCert,
		VerifyConnection: id.verify,
		NextProtos:       []string{"http/1.1"},
	}
}

// clientTLS is the setting of a member dialing another: its certificate
// shown, the other's checked by its key instead of by a name.
func (id *identity) clientTLS() *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{id.cert},
		// No CA and no name to verify (a pod's address is whatever DNS
		// says): VerifyConnection checks the key itself, and the handshake
		// fails if it does not match.
		InsecureSkipVerify: true,
		VerifyConnection:   id.verify,
		NextProtos:         []string{"http/1.1"},
	}
}

// ServerTLS is the fleet listener's TLS setting: only a member (a client
// holding the fleet key) completes a handshake.
func (f *Fleet) ServerTLS() *tls.Config { return f.id.serverTLS() }
