#if SystemLibraries  // the default configuration only: see Package.swift
import AssetPack
import AssetPackTestSupport
import Foundation
import Testing

/// Packs served over https by a real nginx with a certificate from a CA made at test time
/// (``TestCertificates``), through the built binary: reads of both formats, an install and a delta
/// update, over HTTP/1.1 and HTTP/2; the private CA trusted by `--ca-file`, `CURL_CA_BUNDLE` or
/// `SSL_CERT_FILE`; a self-signed, mismatched or untrusted certificate refused with exit 6 and
/// a message that says which.
@Suite(.serialized, .slow) struct RemoteTLSCLITests {
    let dir = TemporaryDirectory("remote-tls")
    let tree: [String: [UInt8]] = [
        "a.txt": Array("hello over TLS".utf8), "img/big.bin": testBytes(3_000_000, seed: 14),
        "text/notes.txt": textBytes(200_000, seed: 15), "empty": [],
    ]

    func run(_ arguments: [String], environment: [String: String] = [:]) throws -> CLI.Run {
        // No CA from the test's own environment: each test says what it trusts.
        let none = ["CURL_CA_BUNDLE": "", "SSL_CERT_FILE": "", "SSL_CERT_DIR": ""]
        return try CLI.run(arguments, password: "pw", environment: none.merging(environment) { $1 })
    }

    /// A pack of `format` in `www/`, packed from `tree`.
    func pack(_ format: String, _ tree: [String: [UInt8]]) throws -> URL {
        let src = try dir.write(tree, under: "src")
        try FileManager.default.createDirectory(at: dir.appending("www"), withIntermediateDirectories: true)
        let out = dir.appending("www/p.\(format)")
        let packed = try run(["pack", src.path, "-o", out.path, "--format", format])
        #expect(packed.status == 0, "\(packed.stderr)")
        return out
    }

    @Test(arguments: ["zip", "container"], [false, true])
    func readsOverHTTPSTrustingAPrivateCA(format: String, http2: Bool) throws {
        let certificates = try TestCertificates()
        let local = try pack(format, tree).path
        let nginx = try NginxServer(root: dir.appending("www"), tls: .init(certificates.server, http2: http2))
        let url = nginx.url("p.\(format)").absoluteString
        #expect(url.hasPrefix("https://127.0.0.1:"))
        let ca = certificates.authority.path
        // The three ways to name the CA, each enough alone.
        let ways: [(arguments: [String], environment: [String: String])] = [
            (["--ca-file", ca], [:]), ([], ["CURL_CA_BUNDLE": ca]), ([], ["SSL_CERT_FILE": ca]),
        ]
        for way in ways {
            let list = try run(["list", url] + way.arguments, environment: way.environment)
            #expect(list.status == 0, "\(way): \(list.stderr)")
            #expect(list.text == (try run(["list", local])).text)
            for (path, bytes) in tree {
                let cat = try run(["cat", url, path] + way.arguments, environment: way.environment)
                let same = cat.stdout == bytes
                #expect(cat.status == 0 && same, "\(way) \(path): \(cat.stderr)")
            }
        }
        let verify = try run(["verify", url, "--ca-file", ca])
        #expect(verify.status == 0, "\(verify.stderr)")
        // Every request went over TLS in the protocol the server offered: HTTP/2 when it did.
        let log = try nginx.accessLog()
        #expect(!log.isEmpty)
        let expected = http2 ? "HTTP/2.0" : "HTTP/1.1"
        #expect(log.allSatisfy { $0.httpProtocol == expected }, "\(log.map { $0.httpProtocol ?? "-" })")
        #expect(log.contains { $0.status == 206 })

        // Trusting nothing but the system's CAs, the test CA's certificate is refused: exit 6.
        let untrusted = try run(["cat", url, "a.txt"])
        #expect(untrusted.status == 6 && untrusted.stdout.isEmpty, "\(untrusted.stderr)")
        #expect(
            untrusted.stderr.contains("TLS certificate is signed by a certificate authority that is not trusted"),
            "\(untrusted.stderr)")
        #expect(untrusted.stderr.contains("--ca-file"), "\(untrusted.stderr)")
    }

    /// An install by URL and a delta update over HTTP/2, the CA named by `SSL_CERT_FILE`: only what
    /// changed is downloaded, as over http.
    @Test func installAndDeltaUpdateOverHTTPS() throws {
        let certificates = try TestCertificates()
        let environment = ["SSL_CERT_FILE": certificates.authority.path]
        var tree = tree
        tree["big/two.bin"] = testBytes(2_000_000, seed: 16)
        let out = try pack("container", tree)
        let nginx = try NginxServer(root: dir.appending("www"), tls: .init(certificates.server, http2: true))
        let url = nginx.url("p.container").absoluteString
        let home = dir.appending("home").path
        let v1 = try run(["install", url, "--into", home], environment: environment)
        #expect(v1.status == 0, "\(v1.stderr)")

        tree["a.txt"] = Array("hello over TLS, version 2".utf8)
        _ = try pack("container", tree)
        try FileManager.default.setAttributes(
            [.modificationDate: Date().addingTimeInterval(20)], ofItemAtPath: out.path)
        let size = try FileSystem.stat(out.path).size
        let v2 = try run(["install", url, "--into", home], environment: environment)
        #expect(v2.status == 0, "\(v2.stderr)")
        let (downloaded, reused) = try #require(RemoteUpdateCLITests.summary(v2.stderr), "\(v2.stderr)")
        #expect(downloaded < size / 10 && reused > size * 9 / 10, "\(v2.stderr)")
        #expect(
            FileManager.default.contents(atPath: home + "/p.container")
                == FileManager.default.contents(atPath: out.path))
        #expect(try nginx.accessLog().allSatisfy { $0.httpProtocol == "HTTP/2.0" })
    }

    /// A certificate that signed itself, or one for another host, is refused even with the CA
    /// trusted: exit 6, nothing on stdout, and the message says which. A CA file that cannot be
    /// read is said to be one.
    @Test func refusedCertificatesSayWhy() throws {
        let certificates = try TestCertificates()
        _ = try pack("container", tree)
        let ca = certificates.authority.path
        let cases: [(TestCertificates.Pair, String)] = [
            (certificates.selfSigned, "the server's TLS certificate is self-signed"),
            (certificates.otherHost, "the server's TLS certificate is for another host name"),
        ]
        for (pair, message) in cases {
            let nginx = try NginxServer(root: dir.appending("www"), tls: .init(pair, http2: true))
            let url = nginx.url("p.container").absoluteString
            for command in [["cat", url, "a.txt"], ["install", url, "--into", dir.appending("home").path]] {
                let refused = try run(command + ["--ca-file", ca])
                #expect(refused.status == 6 && refused.stdout.isEmpty, "\(command): \(refused.stderr)")
                #expect(refused.stderr.contains(message), "\(command): \(refused.stderr)")
            }
            #expect(try nginx.accessLog().isEmpty, "no request reached the server")
        }
        #expect(!FileManager.default.fileExists(atPath: dir.appending("home/p.container").path))

        let nginx = try NginxServer(root: dir.appending("www"), tls: .init(certificates.server, http2: false))
        let url = nginx.url("p.container").absoluteString
        let missing = dir.appending("no-such-ca.pem").path
        let badFile = try run(["cat", url, "a.txt"], environment: ["CURL_CA_BUNDLE": missing])
        #expect(badFile.status == 6, "\(badFile.stderr)")
        #expect(
            badFile.stderr.contains("cannot read the CA certificates of CURL_CA_BUNDLE=\(missing)"), "\(badFile.stderr)"
        )
        let badOption = try run(["cat", url, "a.txt", "--ca-file", missing])
        #expect(badOption.status == 64, "\(badOption.stderr)")
        #expect(badOption.stderr.contains("--ca-file \(missing): no such readable file"), "\(badOption.stderr)")
        let folder = try run(["cat", url, "a.txt", "--ca-file", dir.path])
        #expect(folder.status == 64 && folder.stderr.contains("no such readable file"), "\(folder.stderr)")
    }
}
#endif
