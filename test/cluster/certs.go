package cluster

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// keyPair is a certificate with its private key, both PEM encoded.
type keyPair struct {
	cert    *x509.Certificate
	key     crypto.Signer
	CertPEM []byte
	KeyPEM  []byte
}

// certSpec describes one certificate to issue.
type certSpec struct {
	commonName   string
	organization []string
	dnsNames     []string
	ips          []net.IP
	isCA         bool
	usages       []x509.ExtKeyUsage
	// rsa selects an RSA key written as PKCS#1 ("RSA PRIVATE KEY"): the
	// training operator's cert rotator parses only that format.
	rsa bool
}

// issue creates a certificate signed by parent (self-signed when parent is
// nil), valid for ten years: long enough that the training operator's cert
// rotator (90 days look-ahead) never replaces a certificate given to it.
func issue(spec certSpec, parent *keyPair) (*keyPair, error) {
	var key crypto.Signer
	var keyPEM []byte
	if spec.rsa {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			return nil, err
		}
		key = k
		keyPEM = pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)})
	} else {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, err
		}
		der, err := x509.MarshalECPrivateKey(k)
		if err != nil {
			return nil, err
		}
		key = k
		keyPEM = pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: spec.commonName, Organization: spec.organization},
		DNSNames:              spec.dnsNames,
		IPAddresses:           spec.ips,
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.AddDate(10, 0, 0),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:           spec.usages,
		BasicConstraintsValid: true,
	}
	if spec.isCA {
		tmpl.IsCA = true
		tmpl.KeyUsage |= x509.KeyUsageCertSign
	}
	signerCert, signerKey := tmpl, key
	if parent != nil {
		signerCert, signerKey = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signerCert, key.Public(), signerKey)
	if err != nil {
		return nil, fmt.Errorf("issue certificate %q: %w", spec.commonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &keyPair{
		cert:    cert,
		key:     key,
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  keyPEM,
	}, nil
}

// pki holds the files of the control plane's certificates, all in one
// temporary folder.
type pki struct {
	Dir string
	// CA signs the API server's serving certificate and the admin client
	// certificate.
	CACert, CAKey string
	ServerCert    string
	ServerKey     string
	AdminCert     string
	AdminKey      string
	// Service-account token signing key pair.
	SAKey, SAPub string
	ca           *keyPair
	admin        *keyPair
}

func newPKI(dir string) (*pki, error) {
	p := &pki{Dir: dir}
	ca, err := issue(certSpec{commonName: "gangboost-test-ca", isCA: true}, nil)
	if err != nil {
		return nil, err
	}
	server, err := issue(certSpec{
		commonName: "kube-apiserver",
		dnsNames:   []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
		ips:        []net.IP{net.IPv4(127, 0, 0, 1), net.ParseIP(serviceIPKubernetes)},
		usages:     []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, ca)
	if err != nil {
		return nil, err
	}
	// system:masters bypasses RBAC: the admin identity is for the test and
	// the control-plane components; the training operator runs as its own
	// service account so that its RBAC is tested.
	admin, err := issue(certSpec{
		commonName:   "gangboost-admin",
		organization: []string{"system:masters"},
		usages:       []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, ca)
	if err != nil {
		return nil, err
	}
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	saPub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return nil, err
	}
	p.ca, p.admin = ca, admin
	files := []struct {
		path *string
		name string
		data []byte
	}{
		{&p.CACert, "ca.crt", ca.CertPEM},
		{&p.CAKey, "ca.key", ca.KeyPEM},
		{&p.ServerCert, "apiserver.crt", server.CertPEM},
		{&p.ServerKey, "apiserver.key", server.KeyPEM},
		{&p.AdminCert, "admin.crt", admin.CertPEM},
		{&p.AdminKey, "admin.key", admin.KeyPEM},
		{&p.SAKey, "sa.key", pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(saKey)})},
		{&p.SAPub, "sa.pub", pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: saPub})},
	}
	for _, f := range files {
		*f.path = filepath.Join(dir, f.name)
		if err := os.WriteFile(*f.path, f.data, 0o600); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// webhookCerts issues the training operator's webhook certificates the way
// its cert rotator expects them in the Secret (ca.crt, ca.key, tls.crt,
// tls.key): the CA named after the rotator's CAName, the serving certificate
// valid for the Service DNS name the rotator checks and for 127.0.0.1,
// which the API server dials in tests (there is no Service network).
func webhookCerts(caName, dnsName string) (map[string][]byte, error) {
	ca, err := issue(certSpec{commonName: caName, dnsNames: []string{caName}, isCA: true, rsa: true}, nil)
	if err != nil {
		return nil, err
	}
	srv, err := issue(certSpec{
		commonName: dnsName,
		dnsNames:   []string{dnsName},
		ips:        []net.IP{net.IPv4(127, 0, 0, 1)},
		usages:     []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		rsa:        true,
	}, ca)
	if err != nil {
		return nil, err
	}
	return map[string][]byte{
		"ca.crt":  ca.CertPEM,
		"ca.key":  ca.KeyPEM,
		"tls.crt": srv.CertPEM,
		"tls.key": srv.KeyPEM,
	}, nil
}
