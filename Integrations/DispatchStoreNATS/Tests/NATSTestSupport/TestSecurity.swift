package import DispatchStoreNATS
public import Foundation

/// A user of a secured test cluster: a name, a password, and what it may publish and subscribe to.
public struct TestUser: Sendable {
    /// The user's name.
    public let name: String
    /// Its password.
    public let password: String
    /// The subjects it may publish to (wildcards allowed).
    public let publish: [String]
    /// The subjects it may subscribe to.
    public let subscribe: [String]

    /// A user.
    public init(name: String, password: String, publish: [String], subscribe: [String]) {
        self.name = name
        self.password = password
        self.publish = publish
        self.subscribe = subscribe
    }

    /// A user with every permission, for the tests' own checks of the servers.
    public static let admin = TestUser(name: "admin", password: "admin-secret", publish: [">"], subscribe: [">"])

    /// What a replica of `stream` needs, as Docs/Replication.md lists it: appending to the stream,
    /// the JetStream API for the stream, its consumers and its snapshots' bucket, and the replies.
    public static func replica(of stream: String, password: String = "replica-secret") -> TestUser {
        TestUser(
            name: "replica",
            password: password,
            publish: [
                "dispatchstore.\(stream)", "$JS.API.INFO", "$JS.API.STREAM.INFO.*", "$JS.API.STREAM.CREATE.*",
                "$JS.API.STREAM.UPDATE.*", "$JS.API.STREAM.MSG.GET.*", "$JS.API.DIRECT.GET.>",
                "$JS.API.CONSUMER.CREATE.*", "$JS.API.CONSUMER.DELETE.*.*", "$KV.\(stream)-snapshots.>",
                "$JS.API.STREAM.NAMES", "$JS.FC.>",
            ],
            subscribe: ["_INBOX.>"]
        )
    }

    /// A user that may read `stream` (and export it) but append nothing.
    public static func reader(of stream: String, password: String = "reader-secret") -> TestUser {
        TestUser(
            name: "reader",
            password: password,
            publish: [
                "$JS.API.INFO", "$JS.API.STREAM.INFO.*", "$JS.API.STREAM.MSG.GET.*", "$JS.API.DIRECT.GET.>",
                "$JS.API.CONSUMER.CREATE.*", "$JS.API.CONSUMER.DELETE.*.*", "$JS.API.STREAM.NAMES", "$JS.FC.>",
            ],
            subscribe: ["_INBOX.>"]
        )
    }
}

/// TLS on client and route connections, and users with permissions, for a test cluster.
public struct TestSecurity: Sendable {
    /// The certificates the servers use and trust.
    public let certificates: TestCertificates
    /// The users (``TestUser/admin`` is added).
    public let users: [TestUser]

    /// Security with `users`, certificates made in `directory`.
    ///
    /// - Throws: ``TestServerError`` when `openssl` fails.
    public init(users: [TestUser], directory: URL) throws {
        certificates = try TestCertificates.make(in: directory)
        self.users = users + [.admin]
    }

    /// What a server's configuration says: its certificate for clients and routes (whose
    /// certificates it checks), and the users.
    func configuration() -> String {
        let tls =
            "cert_file: \"\(certificates.certificate)\", key_file: \"\(certificates.key)\", "
            + "ca_file: \"\(certificates.authority)\", timeout: 2"
        let users = users.map { user in
            let publish = user.publish.map { "\"\($0)\"" }.joined(separator: ", ")
            let subscribe = user.subscribe.map { "\"\($0)\"" }.joined(separator: ", ")
            return "{ user: \"\(user.name)\", password: \"\(user.password)\", permissions: { publish: [\(publish)], "
                + "subscribe: [\(subscribe)] } }"
        }
        return "tls { \(tls) }\nauthorization { users = [\n  \(users.joined(separator: ",\n  "))\n] }\n"
    }

    /// A route's TLS settings, checking the other server's certificate.
    func routeConfiguration() -> String {
        "tls { cert_file: \"\(certificates.certificate)\", key_file: \"\(certificates.key)\", "
            + "ca_file: \"\(certificates.authority)\", verify: true, timeout: 2 }"
    }

    /// The connection options of `user` (none when `nil`): its password, and TLS trusting the
    /// servers' authority.
    package func options(as user: TestUser?) -> NATSConnection.Options {
        var options = NATSConnection.Options()
        options.credentials = user.map { .password(user: $0.name, password: $0.password) }
        options.tls = Replication.TLS(trustedCertificates: certificates.authority)
        return options
    }
}
