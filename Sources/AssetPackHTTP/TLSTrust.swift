internal import CLibcurl
import Foundation

// Which certificate authorities an https server's certificate must chain to, and what a refused
// certificate is called in a message (docs/REMOTE.md, "TLS").

/// The CA certificates every https request of one ``HTTPRangeClient`` trusts.
///
/// In order: the library's setting (``TransferLimits/caCertificates``, the CLI's `--ca-file`),
/// then `CURL_CA_BUNDLE`, then `SSL_CERT_FILE` and `SSL_CERT_DIR` (what the curl tool and OpenSSL
/// honour), then the system's store as libcurl was built to find it. A file named replaces the
/// system's store, as `curl --cacert` does: a private CA is trusted for this pack, and nothing
/// else is added.
package struct TLSTrust: Equatable, Sendable {
    /// A PEM file of CA certificates (`nil`: the source is a directory, or the system's).
    package var file: String?
    /// A directory of hashed CA certificates (OpenSSL's `c_rehash` layout).
    package var directory: String?
    /// Where the choice came from, for messages: `"--ca-file"`, `"CURL_CA_BUNDLE"`, … or
    /// `"the system's CA certificates"`.
    package var source: String

    /// The trust a setting and an environment give.
    package static func resolve(
        _ setting: URL?, environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> TLSTrust {
        if let setting {
            return TLSTrust(
                file: setting.path, source: "TransferLimits.caCertificates (--ca-file) \(setting.path)")
        }
        func value(_ name: String) -> String? {
            guard let text = environment[name], !text.isEmpty else { return nil }
            return text
        }
        if let bundle = value("CURL_CA_BUNDLE") { return TLSTrust(file: bundle, source: "CURL_CA_BUNDLE=\(bundle)") }
        let file = value("SSL_CERT_FILE"), directory = value("SSL_CERT_DIR")
        if file != nil || directory != nil {
            let named = [file.map { "SSL_CERT_FILE=\($0)" }, directory.map { "SSL_CERT_DIR=\($0)" }]
            return TLSTrust(file: file, directory: directory, source: named.compactMap { $0 }.joined(separator: ", "))
        }
        return TLSTrust(source: "the system's CA certificates")
    }

    /// Sets the handle's CA file and directory (nothing for the system's store: libcurl's
    /// defaults). What is named replaces both defaults: libcurl is built with a default file and,
    /// on Debian, a default directory (`/etc/ssl/certs`), which `curl_easy_reset` sets again, so
    /// the one not named is cleared, or every public CA would still be trusted beside a private one.
    func apply(to handle: UnsafeMutableRawPointer) {
        guard file != nil || directory != nil else { return }
        if let file {
            _ = assetpack_curl_setopt_string(handle, CURLOPT_CAINFO, file)
        } else {
            _ = assetpack_curl_setopt_pointer(handle, CURLOPT_CAINFO, nil)
        }
        if let directory {
            _ = assetpack_curl_setopt_string(handle, CURLOPT_CAPATH, directory)
        } else {
            _ = assetpack_curl_setopt_pointer(handle, CURLOPT_CAPATH, nil)
        }
    }

    /// What a failed transfer says: libcurl's description of `code` and, for TLS, which
    /// certificate was refused and why, in words an app can show.
    /// - Parameter detail: libcurl's error buffer for the transfer (may be empty).
    func describe(_ code: CURLcode, detail: String) -> String {
        let generic = String(cString: assetpack_curl_easy_strerror(code))
        let said = detail.isEmpty ? generic : detail
        switch code {
        case CURLE_PEER_FAILED_VERIFICATION:
            let lower = said.lowercased()
            let why: String
            if lower.contains("in certificate chain") {
                why = "chains to a self-signed certificate authority that is not trusted"
            } else if lower.contains("self-signed") || lower.contains("self signed") {
                why = "is self-signed"
            } else if lower.contains("subject name") || lower.contains("does not match") {
                why = "is for another host name"
            } else if lower.contains("expired") {
                why = "has expired"
            } else if lower.contains("local issuer") || lower.contains("unable to get issuer") {
                why = "is signed by a certificate authority that is not trusted"
            } else {
                why = "does not verify"
            }
            return "the server's TLS certificate \(why) (\(said)); trusted: \(source). "
                + "To trust a private CA, name its certificate file with --ca-file, "
                + "TransferLimits.caCertificates, CURL_CA_BUNDLE or SSL_CERT_FILE"
        case CURLE_SSL_CACERT_BADFILE:
            return "cannot read the CA certificates of \(source) (\(said))"
        case CURLE_SSL_CONNECT_ERROR:
            return "the TLS handshake failed (\(said))"
        default:
            return said
        }
    }
}
