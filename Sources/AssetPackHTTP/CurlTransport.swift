import AssetPackCore
internal import CLibcurl
import Foundation

// The libcurl binding of HTTPRangeClient: easy handles (pooled, so connections are reused), the
// callbacks that hand a response's head and body to the request's state, and the watchdog that
// enforces TransferLimits from the progress callback. The HTTP rules are in HTTPResponseChecks.swift
// and HTTPRequestState.swift.

extension HTTPRangeClient {
    /// Runs one GET on the calling thread with a pooled handle.
    func perform(_ transfer: Transfer, url: URL, headers: [String]) -> CURLcode {
        if let inMemory { return inMemory.perform(transfer, url: url, headers: headers) }
        let handle = handles.take()
        defer { handles.give(handle) }
        // The error buffer is the transfer's, freed with it: no pooled handle may keep pointing at it.
        defer { _ = assetpack_curl_setopt_pointer(handle, CURLOPT_ERRORBUFFER, nil) }
        var list: UnsafeMutablePointer<curl_slist>?
        for header in headers { list = assetpack_curl_slist_append(list, header) }
        defer { assetpack_curl_slist_free_all(list) }
        let box = Unmanaged.passRetained(transfer)
        defer { box.release() }
        let connectMilliseconds = max(1, Int((limits.connectTimeout * 1000).rounded(.up)))
        // Options that fail to set leave libcurl's default; the transfer then reports what failed.
        _ = assetpack_curl_setopt_string(handle, CURLOPT_URL, url.absoluteString)
        _ = assetpack_curl_setopt_pointer(handle, CURLOPT_HTTPHEADER, UnsafeMutableRawPointer(list))
        _ = assetpack_curl_setopt_string(handle, CURLOPT_PROTOCOLS_STR, "http,https")
        // https: the CA certificates to trust, and libcurl's own words when something fails.
        trust.apply(to: handle)
        transfer.trust = trust
        _ = assetpack_curl_setopt_pointer(handle, CURLOPT_ERRORBUFFER, transfer.errorBuffer)
        // An https pack is never redirected to plain http.
        _ = assetpack_curl_setopt_string(
            handle, CURLOPT_REDIR_PROTOCOLS_STR, url.scheme?.lowercased() == "https" ? "https" : "http,https")
        // Through an https proxy, the proxy's own "200 Connection established" is not the answer.
        _ = assetpack_curl_setopt_long(handle, CURLOPT_SUPPRESS_CONNECT_HEADERS, 1)
        _ = assetpack_curl_setopt_long(handle, CURLOPT_FOLLOWLOCATION, 1)
        _ = assetpack_curl_setopt_long(handle, CURLOPT_MAXREDIRS, 5)
        _ = assetpack_curl_setopt_long(handle, CURLOPT_NOSIGNAL, 1)
        _ = assetpack_curl_setopt_long(handle, CURLOPT_CONNECTTIMEOUT_MS, connectMilliseconds)
        // The deadline, the minimum rate and cancellation: checked on every piece and, with
        // nothing arriving, about once a second.
        _ = assetpack_curl_setopt_long(handle, CURLOPT_NOPROGRESS, 0)
        _ = assetpack_curl_setopt_xferinfo(handle, Transfer.onProgress)
        _ = assetpack_curl_setopt_pointer(handle, CURLOPT_XFERINFODATA, box.toOpaque())
        _ = assetpack_curl_setopt_long(handle, CURLOPT_BUFFERSIZE, Curl.bufferSize)
        _ = assetpack_curl_setopt_callback(handle, CURLOPT_HEADERFUNCTION, Transfer.onHeader)
        _ = assetpack_curl_setopt_pointer(handle, CURLOPT_HEADERDATA, box.toOpaque())
        _ = assetpack_curl_setopt_callback(handle, CURLOPT_WRITEFUNCTION, Transfer.onBody)
        _ = assetpack_curl_setopt_pointer(handle, CURLOPT_WRITEDATA, box.toOpaque())
        return assetpack_curl_easy_perform(handle)
    }
}

/// Process-wide libcurl set-up.
enum Curl {
    /// libcurl's receive buffer: large pieces mean few callbacks (its default is 16 KiB).
    static let bufferSize = 512 << 10

    /// Why libcurl could not be loaded (`nil` once it is: loaded and initialised, once per process).
    private static let unavailable: String? = {
        var error = [CChar](repeating: 0, count: 1024)
        guard assetpack_curl_load(&error, error.count) == 0 else { return nil }
        return String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }()

    /// Loads libcurl the first time a client is made (not at process start; the shim's header says why).
    /// - Throws: `.remote` when it cannot be loaded, naming the library and what to install.
    static func load() throws {
        guard let unavailable else { return }
        throw AssetPackError(
            .remote,
            "remote packs need libcurl, which could not be loaded: \(unavailable) "
                + "(Debian: apt-get install libcurl4; another build of it: name it with ASSETPACK_LIBCURL)")
    }

    /// Failures that another attempt cannot fix: a URL or protocol libcurl refuses, a TLS
    /// certificate that does not verify. Everything else (connecting, timeouts, cut
    /// connections, name resolution) is worth retrying.
    static func isFatal(_ code: CURLcode) -> Bool {
        [
            CURLE_UNSUPPORTED_PROTOCOL, CURLE_URL_MALFORMAT, CURLE_PEER_FAILED_VERIFICATION,
            CURLE_SSL_CACERT_BADFILE, CURLE_SSL_CERTPROBLEM, CURLE_TOO_MANY_REDIRECTS, CURLE_OUT_OF_MEMORY,
        ].contains(code)
    }
}

/// Easy handles between requests: a finished handle keeps its open connection, so the next
/// request to the same server reuses it.
final class HandlePool: @unchecked Sendable {
    private let lock = NSLock()
    private var idle: [UnsafeMutableRawPointer] = []

    func take() -> UnsafeMutableRawPointer {
        if let handle = lock.withLock({ idle.popLast() }) {
            assetpack_curl_easy_reset(handle)  // options go; connections and caches stay
            return handle
        }
        guard let handle = assetpack_curl_easy_init() else { fatalError("curl_easy_init failed: out of memory") }
        return handle
    }

    func give(_ handle: UnsafeMutableRawPointer) { lock.withLock { idle.append(handle) } }

    deinit { for handle in idle { assetpack_curl_easy_cleanup(handle) } }
}

/// What libcurl's callbacks write to during one request: the final response's head, then the
/// body, to a range request's state or into a small buffer (the sidecar).
final class Transfer {
    private let state: RangeState?
    let watchdog: Watchdog
    private var whole: WholeState?
    private let collectLimit: Int
    private(set) var collected: [UInt8] = []
    private var status = 0
    private var headers: [String: String] = [:]
    /// The final response's head, once its blank line arrived.
    private(set) var head: ResponseHead?
    /// libcurl's message about a failure (`CURLOPT_ERRORBUFFER`), empty when none.
    let errorBuffer: UnsafeMutablePointer<CChar> = {
        let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE))
        buffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE))
        return buffer
    }()
    /// The CA certificates the request trusted (named in a message about a refused certificate).
    var trust = TLSTrust(source: "the system's CA certificates")

    deinit { errorBuffer.deallocate() }

    /// What a failed transfer says (``TLSTrust/describe(_:detail:)``).
    func describe(_ code: CURLcode) -> String {
        trust.describe(code, detail: String(cString: errorBuffer).trimmingCharacters(in: .whitespacesAndNewlines))
    }

    init(_ state: RangeState, watchdog: Watchdog) {
        self.state = state
        self.watchdog = watchdog
        collectLimit = 0
    }

    init(collectingUpTo limit: Int, watchdog: Watchdog) {
        state = nil
        self.watchdog = watchdog
        collectLimit = limit
    }

    init(whole: WholeState, watchdog: Watchdog) {
        state = nil
        self.whole = whole
        self.watchdog = watchdog
        collectLimit = 0
    }

    /// libcurl's progress callback: non-zero stops the transfer (`CURLE_ABORTED_BY_CALLBACK`).
    static let onProgress: assetpack_curl_xferinfo_callback = { context, _, downloaded, _, _ in
        guard let context else { return 0 }
        let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
        return transfer.watchdog.allows(downloaded: Int64(downloaded)) ? 0 : 1
    }

    /// One header line (libcurl hands them whole, the status line first, for every response
    /// including redirects and `100 Continue`).
    static let onHeader: assetpack_curl_data_callback = { buffer, size, count, context in
        let length = size * count
        guard let buffer, let context else { return 0 }
        let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
        let line = String(decoding: UnsafeRawBufferPointer(start: buffer, count: length), as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        return transfer.header(line) ? length : 0
    }

    /// A piece of the body. Returning less than its length stops the transfer.
    static let onBody: assetpack_curl_data_callback = { buffer, size, count, context in
        let length = size * count
        guard let context else { return 0 }
        let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
        return transfer.body(UnsafeRawBufferPointer(start: buffer, count: length)) ? length : 0
    }

    /// One header line (the status line first; an empty line ends the head).
    func header(_ line: String) -> Bool {
        if line.hasPrefix("HTTP/") {
            let fields = line.split(separator: " ", maxSplits: 2)
            status = fields.count > 1 ? Int(fields[1]) ?? 0 : 0
            headers = [:]
            head = nil
            return true
        }
        guard line.isEmpty else {
            if let colon = line.firstIndex(of: ":") {
                let name = line[..<colon].lowercased()
                let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                headers[name] = value
            }
            return true
        }
        // The end of one response's head. libcurl goes on after an interim or redirect response.
        if (100..<200).contains(status) || ((300..<400).contains(status) && headers["location"] != nil) {
            return true
        }
        let response = ResponseHead(status: status, headers: headers)
        head = response
        if let whole { return whole.response(response) }
        return state?.response(response) ?? true
    }

    /// A piece of the body. - Returns: Whether to go on.
    func body(_ piece: UnsafeRawBufferPointer) -> Bool {
        if let whole { return whole.body(piece) }
        guard let state else {
            collected += piece.prefix(collectLimit - collected.count)
            return collected.count < collectLimit || piece.isEmpty
        }
        return state.body(piece)
    }
}

/// One request's deadline, minimum rate and cancellation, checked from libcurl's progress
/// callback. The rate is measured over consecutive windows of `rateWindow` seconds from the
/// request's start: a window that brings fewer than `minimumRate × rateWindow` bytes ends the
/// request, so a server that drips or holds the connection fails within about two windows.
final class Watchdog {
    enum Verdict {
        case cancelled
        case deadline
        case tooSlow(bytes: Int64)

        /// - Parameter seconds: The time the bytes took (default: one rate window).
        func describe(_ limits: TransferLimits, seconds elapsed: TimeInterval? = nil) -> String {
            switch self {
            case .cancelled: "cancelled"
            case .deadline:
                "the request did not finish within its deadline of \(seconds(limits.requestTimeout)) s (TransferLimits.requestTimeout, --request-timeout)"
            case .tooSlow(let bytes):
                "the server sent \(bytes) bytes in \(seconds(elapsed ?? limits.rateWindow)) s, below the minimum rate of \(limits.minimumRate) bytes/s (TransferLimits.minimumRate, --min-rate)"
            }
        }

        private func seconds(_ value: TimeInterval) -> String {
            value == value.rounded() ? String(Int(value)) : String(format: "%.1f", value)
        }
    }

    private let limits: TransferLimits
    private let cancellation: Cancellation?
    private let start = DispatchTime.now().uptimeNanoseconds
    private var windowStart: UInt64
    private var windowBytes: Int64 = 0
    private(set) var verdict: Verdict?

    init(_ limits: TransferLimits, _ cancellation: Cancellation?) {
        self.limits = limits
        self.cancellation = cancellation
        windowStart = start
    }

    /// Whether the transfer may go on, with `downloaded` body bytes so far.
    func allows(downloaded: Int64) -> Bool {
        if verdict != nil { return false }
        if cancellation?.isCancelled == true {
            verdict = .cancelled
            return false
        }
        let now = DispatchTime.now().uptimeNanoseconds
        if Double(now - start) / 1e9 > limits.requestTimeout {
            verdict = .deadline
            return false
        }
        let window = Double(now - windowStart) / 1e9
        if window >= limits.rateWindow {
            let bytes = downloaded - windowBytes
            if Double(bytes) < Double(limits.minimumRate) * window {
                verdict = .tooSlow(bytes: bytes)
                return false
            }
            windowStart = now
            windowBytes = downloaded
        }
        return true
    }
}
