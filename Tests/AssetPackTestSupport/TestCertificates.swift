import Foundation

/// A certificate authority made at test time with the `openssl` command (Debian `openssl`), and
/// the server certificates the TLS tests serve: one it signed for 127.0.0.1 and `localhost`, one
/// it signed for another host name, and one that signed itself. Keys are P-256; everything is
/// valid for two days and lives in a private temporary directory.
public final class TestCertificates: @unchecked Sendable {
    /// One certificate and its private key (PEM files).
    public struct Pair: Sendable {
        public var certificate: URL
        public var key: URL
    }

    /// The CA's certificate: the file a client trusts (`--ca-file`, `SSL_CERT_FILE`).
    public let authority: URL
    /// Signed by the CA for `IP:127.0.0.1` and `DNS:localhost`: what a client that trusts the CA accepts.
    public let server: Pair
    /// Signed by the CA for `DNS:other.example` only: a host-name mismatch at 127.0.0.1.
    public let otherHost: Pair
    /// For `IP:127.0.0.1`, signed by itself.
    public let selfSigned: Pair

    private let directory = TemporaryDirectory("assetpack-tls")

    /// Makes the CA and the three certificates.
    /// - Throws: ``HTTPTestServerError`` when `openssl` is missing or fails (its output quoted).
    public init() throws {
        let dir = directory
        func file(_ name: String) -> URL { dir.appending(name) }
        let key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2"]
        let ca = file("ca.pem")
        authority = ca
        try Self.openssl(
            ["req", "-x509"] + key + [
                "-keyout", file("ca.key").path, "-out", ca.path, "-subj", "/CN=AssetPack Test CA",
                "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
            ])
        func issue(_ name: String, names: String) throws -> Pair {
            let pair = Pair(certificate: file("\(name).pem"), key: file("\(name).key"))
            try Self.openssl(
                ["req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"] + [
                    "-keyout", pair.key.path, "-out", file("\(name).csr").path, "-subj", "/CN=\(name)",
                ])
            try Data("subjectAltName=\(names)\nbasicConstraints=CA:FALSE\n".utf8).write(to: file("\(name).ext"))
            try Self.openssl([
                "x509", "-req", "-in", file("\(name).csr").path, "-CA", ca.path, "-CAkey",
                file("ca.key").path, "-CAcreateserial", "-days", "2", "-out", pair.certificate.path, "-extfile",
                file("\(name).ext").path,
            ])
            return pair
        }
        server = try issue("server", names: "IP:127.0.0.1,DNS:localhost")
        otherHost = try issue("other", names: "DNS:other.example")
        selfSigned = Pair(certificate: file("self.pem"), key: file("self.key"))
        try Self.openssl(
            ["req", "-x509"] + key + [
                "-keyout", selfSigned.key.path, "-out", selfSigned.certificate.path, "-subj", "/CN=127.0.0.1",
                "-addext", "subjectAltName=IP:127.0.0.1",
            ])
    }

    private static func openssl(_ arguments: [String]) throws {
        let binary = URL(fileURLWithPath: "/usr/bin/openssl")
        guard FileManager.default.isExecutableFile(atPath: binary.path) else {
            throw HTTPTestServerError(
                "openssl not found at /usr/bin/openssl: the TLS tests need it (apt-get install openssl)")
        }
        let process = Process()
        process.executableURL = binary
        process.arguments = arguments
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        let errors = Pipe()
        process.standardError = errors
        try process.run()
        let said = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw HTTPTestServerError(
                "openssl \(arguments.prefix(2).joined(separator: " ")) failed: \(String(decoding: said, as: UTF8.self))"
            )
        }
    }
}
