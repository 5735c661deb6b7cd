package fakenet

import "crypto/x509"

type x509UnknownAuthority = x509.UnknownAuthorityError
