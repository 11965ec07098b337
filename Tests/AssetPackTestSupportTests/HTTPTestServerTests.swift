#if SystemLibraries  // the remote suites' servers, checked with URLSession (FoundationNetworking links libcurl)
import AssetPackTestSupport
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What one request came back with.
private struct Fetched: Sendable {
    var status: Int = 0
    var headers: [String: String] = [:]
    var body: [UInt8] = []
    var error: String?

    /// A header, by case-insensitive name.
    func header(_ name: String) -> String? {
        headers.first { $0.key.caseInsensitiveCompare(name) == .orderedSame }?.value
    }
}

private final class FetchBox: @unchecked Sendable {
    var fetched = Fetched()
}

/// Fetches `url` synchronously with a fresh, cache-less session (so no connection is reused and no
/// response is served from a cache).
private func fetch(_ url: URL, method: String = "GET", headers: [String: String] = [:]) -> Fetched {
    let configuration = URLSessionConfiguration.ephemeral
    configuration.urlCache = nil
    configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
    configuration.timeoutIntervalForRequest = 5
    let session = URLSession(configuration: configuration)
    defer { session.finishTasksAndInvalidate() }
    var request = URLRequest(url: url)
    request.httpMethod = method
    for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
    let box = FetchBox()
    let done = DispatchSemaphore(value: 0)
    session.dataTask(with: request) { data, response, error in
        if let http = response as? HTTPURLResponse {
            box.fetched.status = http.statusCode
            for (key, value) in http.allHeaderFields {
                box.fetched.headers[String(describing: key)] = String(describing: value)
            }
        }
        box.fetched.body = data.map { [UInt8]($0) } ?? []
        box.fetched.error = error.map { String(describing: $0) }
        done.signal()
    }.resume()
    if done.wait(timeout: .now() + 10) == .timedOut { box.fetched.error = "timed out" }
    return box.fetched
}

private let fileSize = 100_000

/// A served folder holding `f.bin`: 100 KB of seeded bytes.
private func servedFolder() throws -> (TemporaryDirectory, [UInt8]) {
    let folder = TemporaryDirectory("http-root")
    let bytes = testBytes(fileSize, seed: 42)
    try folder.write(["f.bin": bytes, "sub dir/naïve.bin": Array(bytes.prefix(10))])
    return (folder, bytes)
}

@Suite(.slow) struct HTTPTestServerTests {
    // MARK: nginx

    @Test func nginxAnswersARangeWith206AndLogsIt() throws {
        let (folder, bytes) = try servedFolder()
        let nginx = try NginxServer(root: folder.url)
        defer { nginx.stop() }

        let got = fetch(nginx.url("f.bin"), headers: ["Range": "bytes=1000-1999"])
        #expect(got.error == nil)
        #expect(got.status == 206)
        #expect(got.body == Array(bytes[1000...1999]))
        #expect(got.header("Content-Range") == "bytes 1000-1999/\(fileSize)")
        // nginx's ETag: "<hex mtime>-<hex size>".
        let mtime = try #require(
            try FileManager.default.attributesOfItem(atPath: folder.appending("f.bin").path)[.modificationDate] as? Date
        )
        let expectedETag = "\"\(String(Int(mtime.timeIntervalSince1970), radix: 16))-\(String(fileSize, radix: 16))\""
        #expect(got.header("ETag") == expectedETag)

        let suffix = fetch(nginx.url("f.bin"), headers: ["Range": "bytes=-10"])
        #expect(suffix.status == 206 && suffix.body == Array(bytes.suffix(10)))

        let log = try nginx.accessLog(waitingFor: 2)
        #expect(log.count == 2)
        #expect(log.first?.method == "GET" && log.first?.uri == "/f.bin" && log.first?.status == 206)
        #expect(log.first?.bodyBytes == 1000)
        #expect(log.first?.range == "bytes=1000-1999")
        #expect((log.first?.totalBytes ?? 0) > 1000)

        try nginx.resetAccessLog()
        let whole = fetch(nginx.url("sub dir/naïve.bin"))
        #expect(whole.status == 200 && whole.body == Array(bytes.prefix(10)))
        #expect(whole.header("Accept-Ranges") == "bytes")
        let after = try nginx.accessLog(waitingFor: 1)
        #expect(after.count == 1)
        #expect(after.first?.range == nil && after.first?.bodyBytes == 10)
        #expect(after.first?.uri == "/sub%20dir/na%C3%AFve.bin")
    }

    @Test func nginxWithoutRangesAnswers200WithTheWholeFile() throws {
        let (folder, bytes) = try servedFolder()
        let nginx = try NginxServer(root: folder.url, allowRanges: false)
        defer { nginx.stop() }
        let got = fetch(nginx.url("f.bin"), headers: ["Range": "bytes=0-99"])
        #expect(got.status == 200)
        #expect(got.body == bytes)
        #expect(got.header("Accept-Ranges") == nil)
        let log = try nginx.accessLog(waitingFor: 1)
        #expect(log.first?.status == 200 && log.first?.bodyBytes == fileSize && log.first?.range == "bytes=0-99")
    }

    @Test func nginxStopsAndFreesItsPort() throws {
        let (folder, _) = try servedFolder()
        let nginx = try NginxServer(root: folder.url)
        let url = nginx.url("f.bin")
        #expect(fetch(url).status == 200)
        nginx.stop()
        nginx.stop()
        #expect(fetch(url).error != nil)
    }

    // MARK: Apache httpd and lighttpd

    @Test func apacheAnswersRangesLogsThemAndStops() throws {
        let (folder, bytes) = try servedFolder()
        let apache = try ApacheServer(root: folder.url)
        let url = apache.url("f.bin")
        let got = fetch(url, headers: ["Range": "bytes=1000-1999"])
        #expect(got.status == 206 && got.body == Array(bytes[1000...1999]))
        #expect(got.header("Content-Range") == "bytes 1000-1999/\(fileSize)")
        let log = try apache.accessLog(waitingFor: 1)
        #expect(log.first?.status == 206 && log.first?.bodyBytes == 1000 && log.first?.range == "bytes=1000-1999")
        #expect(log.first?.uri == "/f.bin")
        apache.stop()
        apache.stop()
        #expect(fetch(url).error != nil)
    }

    /// Apache in the second after a change: a weak ETag, and If-Range (weak ETag, or the date)
    /// answered with 200; later the same tag, strong, and If-Range honoured.
    @Test func apacheValidatorsAreWeakForASecondAfterAChange() throws {
        let (folder, bytes) = try servedFolder()
        let apache = try ApacheServer(root: folder.url)
        defer { apache.stop() }
        let url = apache.url("f.bin")
        try FileManager.default.setAttributes([.modificationDate: Date()], ofItemAtPath: folder.appending("f.bin").path)
        let fresh = fetch(url, headers: ["Range": "bytes=0-9"])
        let weak = try #require(fresh.header("ETag"))
        let modified = try #require(fresh.header("Last-Modified"))
        #expect(weak.hasPrefix("W/\""), "\(weak)")
        for validator in [weak, modified] {
            let refused = fetch(url, headers: ["Range": "bytes=0-9", "If-Range": validator])
            #expect(refused.status == 200 && refused.body == bytes, "If-Range: \(validator)")
        }
        Thread.sleep(forTimeInterval: 1.5)
        let later = fetch(url, headers: ["Range": "bytes=0-9"])
        #expect(later.header("ETag") == String(weak.dropFirst(2)))
        let honoured = fetch(url, headers: ["Range": "bytes=0-9", "If-Range": later.header("ETag") ?? ""])
        #expect(honoured.status == 206 && honoured.body == Array(bytes.prefix(10)))
    }

    @Test func lighttpdAnswersRangesWithValidatorsAndStops() throws {
        let (folder, bytes) = try servedFolder()
        let lighttpd = try LighttpdServer(root: folder.url)
        let url = lighttpd.url("f.bin")
        let got = fetch(url, headers: ["Range": "bytes=10-19"])
        #expect(got.status == 206 && got.body == Array(bytes[10...19]))
        #expect(got.header("Content-Range") == "bytes 10-19/\(fileSize)")
        let etag = try #require(got.header("ETag"))
        #expect(got.header("Last-Modified") != nil)
        let honoured = fetch(url, headers: ["Range": "bytes=10-19", "If-Range": etag])
        #expect(honoured.status == 206)
        let log = try lighttpd.accessLog(waitingFor: 2)
        #expect(log.first?.status == 206 && log.first?.bodyBytes == 10 && log.first?.range == "bytes=10-19")
        lighttpd.stop()
        #expect(fetch(url).error != nil)
        // Without a type for the file, lighttpd sends no validators at all.
        let untyped = try LighttpdServer(root: folder.url, assignTypes: false)
        defer { untyped.stop() }
        let bare = fetch(untyped.url("f.bin"), headers: ["Range": "bytes=10-19"])
        #expect(bare.status == 206 && bare.header("ETag") == nil && bare.header("Last-Modified") == nil)
    }

    // MARK: fault-injecting server

    @Test func faultyServerWithoutFaultServesRangesLikeNginx() throws {
        let (folder, bytes) = try servedFolder()
        let server = try FaultyHTTPServer(root: folder.url)
        defer { server.stop() }
        let got = fetch(server.url("f.bin"), headers: ["Range": "bytes=10-19"])
        #expect(got.status == 206 && got.body == Array(bytes[10...19]))
        #expect(got.header("Content-Range") == "bytes 10-19/\(fileSize)")
        let etag = try #require(got.header("ETag"))
        #expect(etag.hasPrefix("\"") && etag.hasSuffix("-\(String(fileSize, radix: 16))\""))

        let open = fetch(server.url("f.bin"), headers: ["Range": "bytes=99990-"])
        #expect(open.status == 206 && open.body == Array(bytes[99_990...]))
        let suffix = fetch(server.url("f.bin"), headers: ["Range": "bytes=-5"])
        #expect(suffix.status == 206 && suffix.body == Array(bytes.suffix(5)))
        let past = fetch(server.url("f.bin"), headers: ["Range": "bytes=200000-"])
        #expect(past.status == 416 && past.header("Content-Range") == "bytes */\(fileSize)")
        let head = fetch(server.url("f.bin"), method: "HEAD")
        #expect(head.status == 200 && head.body.isEmpty && head.header("Content-Length") == "\(fileSize)")
        #expect(head.header("Accept-Ranges") == "bytes" && head.header("ETag") == etag)
        let stale = fetch(server.url("f.bin"), headers: ["Range": "bytes=0-9", "If-Range": "\"0-0\""])
        #expect(stale.status == 200 && stale.body == bytes)
        let fresh = fetch(server.url("f.bin"), headers: ["Range": "bytes=0-9", "If-Range": etag])
        #expect(fresh.status == 206 && fresh.body == Array(bytes[0...9]))
        #expect(fetch(server.url("missing.bin")).status == 404)
        #expect(fetch(server.url("sub dir/naïve.bin")).body == Array(bytes.prefix(10)))

        let log = try server.requests(waitingFor: 9)
        #expect(try server.requestCount == 9)
        let first = try #require(log.first { $0.range == "bytes=10-19" })
        #expect(first.method == "GET" && first.uri == "/f.bin" && first.status == 206)
        #expect(first.bodyBytes == 10 && first.totalBytes > 10)
        // Each line is written just after its response, so two requests on two connections may
        // log in either order: compare what was logged, not where.
        #expect(log.map(\.status).sorted() == [200, 200, 200, 206, 206, 206, 206, 404, 416])
        let headLine = try #require(log.first { $0.method == "HEAD" })
        #expect(headLine.status == 200 && headLine.bodyBytes == 0 && headLine.range == nil)
    }

    @Test func faultyServerCapsRangesWeakensValidatorsOrRefusesIfRange() throws {
        let (folder, bytes) = try servedFolder()
        let server = try FaultyHTTPServer(root: folder.url, fault: .capRanges(bytes: 1000))
        defer { server.stop() }
        let url = server.url("f.bin")
        let capped = fetch(url, headers: ["Range": "bytes=500-9999"])
        #expect(capped.status == 206 && capped.body == Array(bytes[500..<1500]))
        #expect(capped.header("Content-Range") == "bytes 500-1499/\(fileSize)")

        try server.setFault(.weakValidators(requests: 2))
        let weak = fetch(url, headers: ["Range": "bytes=0-9"])
        let tag = try #require(weak.header("ETag"))
        #expect(tag.hasPrefix("W/\""))
        #expect(fetch(url, headers: ["Range": "bytes=0-9", "If-Range": tag]).status == 200)
        let strong = fetch(url, headers: ["Range": "bytes=0-9", "If-Range": String(tag.dropFirst(2))])
        #expect(strong.status == 206 && strong.header("ETag") == String(tag.dropFirst(2)))

        try server.setFault(.refuseIfRange)
        let plain = fetch(url, headers: ["Range": "bytes=0-9"])
        #expect(plain.status == 206)
        let refused = fetch(url, headers: ["Range": "bytes=0-9", "If-Range": plain.header("ETag") ?? ""])
        #expect(refused.status == 200 && refused.body == bytes)
    }

    @Test func truncatedBodyFailsTheFirstRangedRequestsThenRecovers() throws {
        let (folder, bytes) = try servedFolder()
        let server = try FaultyHTTPServer(root: folder.url, fault: .truncateBody(afterBytes: 100, times: 2))
        defer { server.stop() }
        let url = server.url("f.bin")
        // A request without Range is not counted.
        #expect(fetch(url).body == bytes)
        for _ in 0..<2 {
            let cut = fetch(url, headers: ["Range": "bytes=0-9999"])
            #expect(cut.error != nil || cut.body.count < 10_000)
            #expect(cut.body == Array(bytes.prefix(cut.body.count)))
        }
        let whole = fetch(url, headers: ["Range": "bytes=0-9999"])
        #expect(whole.error == nil && whole.status == 206 && whole.body == Array(bytes.prefix(10_000)))
        let log = try server.requests(waitingFor: 4)
        #expect(log.map(\.bodyBytes) == [fileSize, 100, 100, 10_000])

        try server.setFault(.truncateBody(afterBytes: 0, times: .max))
        let none = fetch(url, headers: ["Range": "bytes=5-"])
        #expect(none.error != nil || none.body.isEmpty)
    }

    @Test func corruptByteIsFlippedWhereverAResponseCoversIt() throws {
        let (folder, bytes) = try servedFolder()
        let server = try FaultyHTTPServer(root: folder.url, fault: .corruptByte(offsetInFile: 5_000))
        defer { server.stop() }
        let url = server.url("f.bin")
        var expected = bytes
        expected[5_000] ^= 0xFF
        let whole = fetch(url)
        #expect(whole.status == 200 && whole.body == expected)
        let covering = fetch(url, headers: ["Range": "bytes=4990-5009"])
        #expect(covering.status == 206 && covering.body == Array(expected[4_990...5_009]))
        let elsewhere = fetch(url, headers: ["Range": "bytes=0-999"])
        #expect(elsewhere.body == Array(bytes[0...999]))
        #expect(whole.header("ETag") == elsewhere.header("ETag"))
        try server.setFault(.none)
        #expect(fetch(url).body == bytes)
    }

    @Test func droppedConnectionsAnd503sLastTheGivenNumberOfRequests() throws {
        let (folder, bytes) = try servedFolder()
        let server = try FaultyHTTPServer(root: folder.url, fault: .dropConnectionBeforeHeaders(times: 1))
        defer { server.stop() }
        let url = server.url("f.bin")
        let dropped = fetch(url, headers: ["Range": "bytes=0-9"])
        #expect(dropped.error != nil && dropped.status == 0)
        #expect(fetch(url, headers: ["Range": "bytes=0-9"]).body == Array(bytes[0...9]))

        try server.resetRequests()
        try server.setFault(.status503(times: 2))
        #expect(fetch(url).status == 503)
        let second = fetch(url, headers: ["Range": "bytes=0-9"])
        #expect(second.status == 503 && second.header("Retry-After") == "0")
        #expect(fetch(url, headers: ["Range": "bytes=0-9"]).status == 206)
        #expect(try server.requests(waitingFor: 3).map(\.status) == [503, 503, 206])
    }

    @Test func ignoreRangeAnswers200WithTheWholeFile() throws {
        let (folder, bytes) = try servedFolder()
        let server = try FaultyHTTPServer(root: folder.url, fault: .ignoreRange)
        defer { server.stop() }
        let got = fetch(server.url("f.bin"), headers: ["Range": "bytes=0-99"])
        #expect(got.status == 200 && got.body == bytes && got.header("Accept-Ranges") == nil)
    }

    @Test func changeETagAfterReportsAReplacedFile() throws {
        let (folder, bytes) = try servedFolder()
        let server = try FaultyHTTPServer(root: folder.url, fault: .changeETagAfter(requests: 1))
        defer { server.stop() }
        let url = server.url("f.bin")
        let first = fetch(url, headers: ["Range": "bytes=0-9"])
        let etag = try #require(first.header("ETag"))
        let second = fetch(url, headers: ["Range": "bytes=10-19", "If-Range": etag])
        #expect(second.header("ETag") != nil && second.header("ETag") != etag)
        #expect(second.header("Last-Modified") != first.header("Last-Modified"))
        // If-Range with the old ETag: the whole (new) file.
        #expect(second.status == 200 && second.body == bytes)
    }
}
#endif
