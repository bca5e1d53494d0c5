public import Foundation

/// Certificates for tests, made with `openssl` in a directory of their own: a certificate authority,
/// a certificate signed by it for 127.0.0.1 (for servers, routes and clients alike), and a second
/// authority that signed nothing the servers use.
public struct TestCertificates: Sendable {
    /// The directory holding the files.
    public let directory: URL
    /// The authority's certificate (PEM).
    public var authority: String { path("ca.pem") }
    /// A certificate for 127.0.0.1 that the authority signed, good for servers and clients.
    public var certificate: String { path("cert.pem") }
    /// Its private key.
    public var key: String { path("key.pem") }
    /// Another authority's certificate: trusting only it, a client refuses the servers.
    public var otherAuthority: String { path("other-ca.pem") }

    /// Makes the certificates in `directory`.
    ///
    /// - Throws: ``TestServerError`` when `openssl` is missing or fails.
    public static func make(in directory: URL) throws -> TestCertificates {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let certificates = TestCertificates(directory: directory)
        let days = ["-days", "2"]
        try certificates.openssl(
            [
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca-key.pem", "-out", "ca.pem", "-subj",
                "/CN=DispatchStore test CA",
            ] + days
        )
        try certificates.openssl(
            [
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "other-ca-key.pem", "-out", "other-ca.pem",
                "-subj", "/CN=Another CA",
            ] + days
        )
        try certificates.openssl([
            "req", "-newkey", "rsa:2048", "-nodes", "-keyout", "key.pem", "-out", "cert.csr", "-subj", "/CN=127.0.0.1",
        ])
        try "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n".write(
            to: directory.appendingPathComponent("extensions.cnf"),
            atomically: true,
            encoding: .utf8
        )
        try certificates.openssl(
            [
                "x509", "-req", "-in", "cert.csr", "-CA", "ca.pem", "-CAkey", "ca-key.pem", "-CAcreateserial", "-out",
                "cert.pem", "-extfile", "extensions.cnf",
            ] + days
        )
        return certificates
    }

    private func path(_ name: String) -> String {
        directory.appendingPathComponent(name).path
    }

    private func openssl(_ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = arguments
        process.currentDirectoryURL = directory
        process.standardOutput = FileHandle.nullDevice
        let errors = Pipe()
        process.standardError = errors
        do {
            try process.run()
        } catch {
            throw TestServerError("cannot run /usr/bin/openssl: \(error)")
        }
        let output = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw TestServerError(
                "openssl \(arguments.joined(separator: " ")) failed: \(String(decoding: output, as: UTF8.self))"
            )
        }
    }
}
