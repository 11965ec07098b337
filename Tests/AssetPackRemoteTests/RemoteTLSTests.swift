#if SystemLibraries  // the default configuration only: see Package.swift
import AssetPack
import AssetPackCore
import AssetPackHTTP
import AssetPackRemote
import AssetPackTestSupport
import Foundation
import Testing

/// The library's side of https (docs/REMOTE.md, "TLS"): which CA certificates a request trusts,
/// and a private CA named in ``TransferLimits/caCertificates``. The CLI's side is RemoteTLSCLITests.
@Suite struct TLSTrustTests {
    @Test func theSettingComesFirstThenCurlsVariableThenOpenSSLsThenTheSystem() {
        let all = ["CURL_CA_BUNDLE": "/b.pem", "SSL_CERT_FILE": "/f.pem", "SSL_CERT_DIR": "/d"]
        let setting = TLSTrust.resolve(URL(fileURLWithPath: "/s.pem"), environment: all)
        #expect(setting.file == "/s.pem" && setting.directory == nil)
        #expect(setting.source.contains("--ca-file"))
        let bundle = TLSTrust.resolve(nil, environment: all)
        #expect(bundle == TLSTrust.resolve(nil, environment: ["CURL_CA_BUNDLE": "/b.pem"]))
        #expect(bundle.file == "/b.pem" && bundle.directory == nil && bundle.source == "CURL_CA_BUNDLE=/b.pem")
        let openssl = TLSTrust.resolve(nil, environment: ["SSL_CERT_FILE": "/f.pem", "SSL_CERT_DIR": "/d"])
        #expect(openssl.file == "/f.pem" && openssl.directory == "/d")
        #expect(openssl.source == "SSL_CERT_FILE=/f.pem, SSL_CERT_DIR=/d")
        // An empty variable is no variable (as the curl tool reads them).
        let system = TLSTrust.resolve(nil, environment: ["CURL_CA_BUNDLE": "", "SSL_CERT_FILE": ""])
        #expect(system.file == nil && system.directory == nil && system.source == "the system's CA certificates")
    }
}

@Suite(.serialized, .slow) struct RemoteTLSTests {
    let dir = TemporaryDirectory("remote-tls")

    @Test(arguments: [PackFormat.zip, .container])
    func aPrivateCAInTransferLimitsIsTrusted(format: PackFormat) async throws {
        let certificates = try TestCertificates()
        let files = ["a.bin": testBytes(700_000, seed: 3), "b.txt": Array("tls".utf8)]
        try dir.packForServing(files, format, to: "p.pack", signingKey: nil)
        let nginx = try NginxServer(root: dir.appending("www"), tls: .init(certificates.server, http2: true))
        var transfer = TransferLimits.default
        transfer.caCertificates = certificates.authority
        let reader = try await AssetPacks.open(
            url: nginx.url("p.pack"), credential: .password("pw"), transfer: transfer)
        for (path, bytes) in files { #expect(try reader.read(path) == bytes, "\(path)") }

        // Without it (and with no variable naming a CA), the certificate does not verify.
        guard ProcessInfo.processInfo.environment["CURL_CA_BUNDLE"] == nil,
            ProcessInfo.processInfo.environment["SSL_CERT_FILE"] == nil
        else { return }
        let error = await #expect(throws: AssetPackError.self) {
            try await AssetPacks.open(url: nginx.url("p.pack"), credential: .password("pw"))
        }
        #expect(error?.code == .remote)
        #expect(
            error?.message.contains("certificate authority that is not trusted") == true, "\(String(describing: error))"
        )
    }
}
#endif
