extension Replication {
    /// Who a replica is to the servers, when they ask (their `authorization` block).
    ///
    /// Give each replica a user that may publish to the stream's subject and use the JetStream API
    /// the replication needs, and nothing else (Docs/Replication.md shows the permissions).
    public enum Credentials: Sendable, Hashable {
        /// A user and a password.
        case password(user: String, password: String)
        /// A token.
        case token(String)
        /// A credentials file (`.creds`: a user's JWT and its NKey seed), for servers that use
        /// decentralized authentication.
        case file(String)
    }

    /// How a replica checks the servers over TLS, and proves who it is to them.
    ///
    /// A URL that starts with `tls://` turns TLS on too; then, without settings, the system's trusted
    /// authorities check the servers.
    public struct TLS: Sendable, Hashable {
        /// The PEM file of the authorities that signed the servers' certificates, or `nil` for the
        /// system's.
        public var trustedCertificates: String?
        /// The PEM file of this client's certificate, when the servers ask for one (`verify: true`).
        public var certificate: String?
        /// The PEM file of that certificate's private key; the certificate's file when `nil`.
        public var privateKey: String?

        /// TLS settings.
        ///
        /// - Parameters:
        ///   - trustedCertificates: The authorities that signed the servers' certificates.
        ///   - certificate: This client's certificate, for servers that ask for one.
        ///   - privateKey: Its private key.
        public init(trustedCertificates: String? = nil, certificate: String? = nil, privateKey: String? = nil) {
            self.trustedCertificates = trustedCertificates
            self.certificate = certificate
            self.privateKey = privateKey
        }
    }
}
