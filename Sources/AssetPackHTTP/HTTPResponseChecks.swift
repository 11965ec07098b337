import AssetPackCore
internal import CLibcurl
import Foundation

/// The HTTP rules of ``HTTPRangeClient``: what a response must be to be taken (status,
/// `Content-Range`, the pinned version's validators), and which validator `If-Range` carries
/// (docs/REMOTE.md, "Consistency").
extension HTTPRangeClient {
    /// The `If-Range` validator for `version`, first seen in a response dated `date`: a strong
    /// ETag; with no ETag at all, a `Last-Modified` at least 60 s older than the response's
    /// `Date` (RFC 9110 §8.8.2.2; Apache treats a date less than a second old as weak); else none.
    static func ifRangeValidator(for version: Version, date: String?) -> String? {
        if let etag = version.etag { return version.hasWeakETag ? nil : etag }
        guard let modified = version.lastModified, let date else { return nil }
        let lastModified = assetpack_curl_getdate(modified, nil)
        let sent = assetpack_curl_getdate(date, nil)
        guard lastModified > 0, sent > 0, sent - lastModified >= 60 else { return nil }
        return modified
    }

    /// Checks a response's status and headers against the request and the pinned version.
    func accept(_ response: ResponseHead, start: UInt64, end: UInt64) -> Failure? {
        let where_ = url.absoluteString
        switch response.status {
        case 206: break
        case 200:
            if version != nil {
                guard hasChanged(response) else { return .wholeUnchanged }
                let error = AssetPackError(.remote, "\(where_) changed while it was being read (\(describe(response)))")
                lock.withLock { changed = error }
                return .fatal(error)
            }
            let announced = Version(
                size: response["Content-Length"].flatMap { UInt64($0) } ?? 0, etag: response["ETag"],
                lastModified: response["Last-Modified"])
            lock.withLock { rangeless = announced }
            return .fatal(ignoresRange())
        case 416:
            // Without If-Range, a file that shrank answers 416: its new size shows the change.
            if let pinned = version, let total = response["Content-Range"].flatMap(Self.unsatisfiedTotal),
                total != pinned.size
            {
                let error = AssetPackError(
                    .remote, "\(where_) changed while it was being read (was \(pinned.size) bytes; now \(total))")
                lock.withLock { changed = error }
                return .fatal(error)
            }
            return .fatal(AssetPackError(.integrityFailure, "\(where_) is shorter than expected (HTTP 416)"))
        case 408, 429, 500...599: return .transient
        default: return .fatal(AssetPackError(.remote, "\(where_): HTTP \(response.status)"))
        }
        guard let contentRange = response["Content-Range"],
            let (first, last, total) = Self.parseContentRange(contentRange), first == start, last < end, last >= first
        else {
            return .fatal(
                AssetPackError(
                    .remote,
                    "\(where_): the server answered bytes \(response["Content-Range"] ?? "(no Content-Range)") to a request for bytes \(start)-\(end - 1)"
                ))
        }
        // A range is the file's own bytes, exactly: not encoded (libcurl is not asked to decode,
        // so a gzipped body would be taken as the file's), not a multipart body, and as long as
        // it says. Checked at the head, before a byte of the body is kept anywhere.
        if let encoding = response["Content-Encoding"], encoding.lowercased() != "identity" {
            return .fatal(
                AssetPackError(
                    .remote,
                    "\(where_): the server encoded the bytes \(first)-\(last) (Content-Encoding: \(encoding)); a range must be the file's own bytes"
                ))
        }
        if let type = response["Content-Type"], type.lowercased().hasPrefix("multipart/") {
            return .fatal(
                AssetPackError(.remote, "\(where_): the server answered one range with a multipart body (\(type))"))
        }
        if let length = response["Content-Length"].flatMap({ UInt64($0) }), length != last - first + 1 {
            return .fatal(
                AssetPackError(
                    .remote,
                    "\(where_): the server announced \(length) bytes (Content-Length) for the bytes \(first)-\(last)"))
        }
        let seen = Version(size: total, etag: response["ETag"], lastModified: response["Last-Modified"])
        return lock.withLock {
            guard let pinned else {
                guard seen.etag != nil || seen.lastModified != nil else {
                    return .fatal(
                        AssetPackError(
                            .remote,
                            "\(where_): the server sends neither ETag nor Last-Modified, so a change to the file could not be detected"
                        ))
                }
                self.pinned = seen
                if !ifRangeRefused { ifRange = Self.ifRangeValidator(for: seen, date: response["Date"]) }
                return nil
            }
            guard seen.isSame(as: pinned) else {
                let error = AssetPackError(
                    .remote,
                    "\(where_) changed while it was being read (was \(pinned.etag ?? pinned.lastModified ?? "?"), \(pinned.size) bytes; now \(seen.etag ?? seen.lastModified ?? "?"), \(seen.size) bytes)"
                )
                changed = error
                return .fatal(error)
            }
            // The weak ETag turned strong (Apache, a second after the change): now If-Range can
            // carry it.
            if ifRange == nil, !ifRangeRefused, pinned.hasWeakETag, let etag = seen.etag, !seen.hasWeakETag {
                ifRange = etag
            }
            return nil
        }
    }

    /// A `200` (the whole file) is another version than the pinned one: another size, or other
    /// validators (the ETag by weak comparison).
    private func hasChanged(_ response: ResponseHead) -> Bool {
        guard let pinned = version else { return false }
        let length = response["Content-Length"].flatMap { UInt64($0) } ?? pinned.size
        let seen = Version(size: length, etag: response["ETag"], lastModified: response["Last-Modified"])
        return !seen.isSame(as: pinned)
    }

    func ignoresRange() -> AssetPackError {
        AssetPackError(
            .remote, "\(url.absoluteString): the server ignores Range requests (it answered 200 with the whole file)")
    }

    /// The total of a 416's `bytes */total`.
    static func unsatisfiedTotal(_ value: String) -> UInt64? {
        let parts = value.trimmingCharacters(in: .whitespaces).split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bytes", parts[1].hasPrefix("*/") else { return nil }
        return UInt64(parts[1].dropFirst(2))
    }

    private func describe(_ response: ResponseHead) -> String {
        "now \(response["ETag"] ?? response["Last-Modified"] ?? "?")"
    }

    /// `bytes first-last/total`.
    static func parseContentRange(_ value: String) -> (UInt64, UInt64, UInt64)? {
        let parts = value.trimmingCharacters(in: .whitespaces).split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bytes" else { return nil }
        let rangeAndTotal = parts[1].split(separator: "/")
        guard rangeAndTotal.count == 2, let total = UInt64(rangeAndTotal[1]) else { return nil }
        let bounds = rangeAndTotal[0].split(separator: "-")
        guard bounds.count == 2, let first = UInt64(bounds[0]), let last = UInt64(bounds[1]), last < total else {
            return nil
        }
        return (first, last, total)
    }
}

/// A response's status line and headers.
struct ResponseHead {
    var status: Int
    /// Lower-cased names.
    var headers: [String: String]

    subscript(name: String) -> String? { headers[name.lowercased()] }
}
