#if SystemLibraries  // the default configuration only: see Package.swift
import AssetPack
import AssetPackHTTP
import AssetPackRemote
import AssetPackTestSupport
import Foundation
import Testing

/// Remote packs over real HTTP: nginx for what a CDN origin does, and a fault-injecting server
/// for what networks and broken servers do (docs/REMOTE.md).
@Suite(.serialized, .slow) struct RemoteTests {
    let dir = TemporaryDirectory("remote")
    let publisher = PublisherSigningKey.generate()

    /// Fast retries, so that fault tests do not wait; the 2 MB entry is streamed through memory
    /// (every fault test then covers that path too).
    static var options: RemoteMirror.Options {
        var o = RemoteMirror.Options()
        o.retry.initialDelay = 0.01
        o.streamThreshold = 1 << 20
        return o
    }

    /// A tree whose first entry (by path) is large, so the small ones lie past the first request.
    func tree(seed: UInt64 = 1, changed: [String: [UInt8]] = [:], removed: Set<String> = []) -> [String: [UInt8]] {
        var files: [String: [UInt8]] = [
            "a-big.bin": testBytes(2_000_000, seed: seed),
            "empty": [],
            "text/readme.txt": textBytes(30_000, seed: seed),
        ]
        for i in 0..<40 { files["small/s\(i).bin"] = testBytes(4096, seed: seed &+ UInt64(i) &+ 100) }
        for (k, v) in changed { files[k] = v }
        for k in removed { files[k] = nil }
        return files
    }

    @discardableResult
    func pack(_ files: [String: [UInt8]], _ format: PackFormat, to name: String, signed: Bool = false) throws -> URL {
        try dir.packForServing(files, format, to: name, signingKey: signed ? publisher : nil)
    }

    func open(_ url: URL, trusting keys: [PublisherKey] = []) throws -> RemotePackReader {
        try RemotePackReader(url: url, credential: .password("pw"), trustedKeys: keys, options: Self.options)
    }

    func expectCode(_ code: AssetPackError.Code, _ body: () throws -> Void, _ note: String = "") {
        do {
            try body()
            Issue.record("no error (\(note))")
        } catch let error as AssetPackError {
            #expect(error.code == code, "\(note): \(error)")
        } catch {
            Issue.record("\(note): \(error)")
        }
    }

    // MARK: - Reading

    @Test(arguments: [PackFormat.zip, .container])
    func everyEntryReadsOverHTTPAsItDoesLocally(format: PackFormat) async throws {
        let files = tree()
        let local = try pack(files, format, to: "p.pack", signed: true)
        let nginx = try NginxServer(root: dir.appending("www"))
        let reader = try await AssetPacks.open(
            url: nginx.url("p.pack"), credential: .password("pw"), trustedKeys: [publisher.publicKey])
        #expect(reader.publisher == publisher.publicKey)
        let localReader = try AssetPacks.open(local.path, credential: .password("pw"))
        #expect(reader.entries == localReader.entries)
        for (path, bytes) in files { #expect(try reader.read(path) == bytes, "\(path)") }
        var streamed: [UInt8] = []
        try reader.stream("text/readme.txt") { streamed.append(contentsOf: $0) }
        #expect(streamed == files["text/readme.txt"])
        // A range through the reader protocol: a container fetches only the chunks it covers.
        #expect(
            try reader.readRange("a-big.bin", offset: 1_000_000, count: 5000)
                == Array(files["a-big.bin"]![1_000_000..<1_005_000]))
    }

    @Test(arguments: [PackFormat.zip, .container])
    func oneEntryReadFetchesOnlyThatEntry(format: PackFormat) throws {
        let local = try pack(tree(), format, to: "p.pack")
        let nginx = try NginxServer(root: dir.appending("www"))
        let reader = try open(nginx.url("p.pack"))
        let opening = try nginx.accessLog(waitingFor: reader.transferred.requests)
        #expect(opening.count <= 3, "open took \(opening.count) requests")
        #expect(opening.allSatisfy { $0.status == 206 })
        try nginx.resetAccessLog()
        let span = try #require(reader.local.storedSpan("small/s17.bin"))
        #expect(try reader.read("small/s17.bin") == tree()["small/s17.bin"])
        let log = try nginx.accessLog(waitingFor: 1)
        #expect(log.count == 1)
        #expect(log.first?.bodyBytes == span.count, "\(log)")
        #expect(log.first?.range == "bytes=\(span.lowerBound)-\(span.upperBound - 1)")
        // Reading it again is served from the mirror.
        _ = try reader.read("small/s17.bin")
        #expect(try nginx.accessLog().count == 1)
        let size = try FileSystem.stat(local.path).size
        #expect(reader.transferred.bytes < size / 10, "\(reader.transferred.bytes) of \(size) bytes")
        // A container range read fetches only the chunks it covers.
        if format == .container {
            try nginx.resetAccessLog()
            _ = try reader.readRange("a-big.bin", offset: 1_500_000, count: 100)
            let ranged = try nginx.accessLog(waitingFor: 1)
            #expect(ranged.count == 1 && ranged[0].bodyBytes <= 2 * (65536 + 16), "\(ranged)")
        }
    }

    /// Entries libzip decodes (unencrypted, ZipCrypto) read through the same byte source as the
    /// bulk AES decoder's: one request for the entry's span, the bytes checked as locally, and a
    /// stored entry's range read there alone (issue 23: no read path bypasses the source).
    @Test(arguments: [PackEncryption.none, .zipCrypto])
    func entriesLibzipDecodesReadThroughTheSource(encryption: PackEncryption) throws {
        var files = tree()
        // Early in the file: the last 64 KiB came with the end records.
        files["a-text.txt"] = Array(String(repeating: "libzip reads through the source. ", count: 40_000).utf8)
        let local = try dir.packForServing(files, .zip, to: "p.zip", encryption: encryption)
        let nginx = try NginxServer(root: dir.appending("www"))
        let reader = try RemotePackReader(
            url: nginx.url("p.zip"), credential: encryption == .none ? nil : .password("pw"), options: Self.options)
        // The open's requests are logged first (nginx logs a request when it ends).
        let opening = try nginx.accessLog(waitingFor: reader.transferred.requests)
        // The first 64 KiB, then the end records and directory (which hold what libzip reads too).
        #expect(opening.count == 2, "\(opening.map { $0.range ?? "" })")
        try nginx.resetAccessLog()
        for path in ["a-text.txt", "small/s17.bin"] {
            let span = try #require(reader.local.storedSpan(path))
            #expect(try reader.read(path) == files[path], "\(path)")
            let log = try nginx.accessLog(waitingFor: 1)
            #expect(log.count == 1 && log.first?.bodyBytes == span.count, "\(path) \(span): \(log)")
            try nginx.resetAccessLog()
        }
        #expect(
            try reader.readRange("a-big.bin", offset: 1_000_000, count: 3000)
                == Array(files["a-big.bin"]![1_000_000..<1_003_000]))
        // Stored and unencrypted: the range alone; encrypted, the entry is decoded from its start.
        let size = try FileSystem.stat(local.path).size
        if encryption == .none {
            #expect(reader.transferred.bytes < size / 2, "\(reader.transferred.bytes) of \(size) bytes")
        }
    }

    @Test func theCacheStaysWithinItsLimit() throws {
        let files = tree()
        _ = try pack(files, .container, to: "p.pack")
        let nginx = try NginxServer(root: dir.appending("www"))
        var options = Self.options
        options.cacheLimit = 100_000
        options.streamThreshold = .max  // the big entry goes through the file and the cache
        let reader = try RemotePackReader(url: nginx.url("p.pack"), credential: .password("pw"), options: options)
        let structure = reader.mirror.held.total
        #expect(try reader.read("a-big.bin") == files["a-big.bin"])
        for i in 0..<40 { #expect(try reader.read("small/s\(i).bin") == files["small/s\(i).bin"]) }
        // The big entry was evicted; what is held beyond the pinned structure is within the limit.
        #expect(reader.mirror.held.total <= structure + options.cacheLimit, "\(reader.mirror.held.total)")
        let span = try #require(reader.local.storedSpan("a-big.bin"))
        #expect(!reader.mirror.held.contains(span))
        try nginx.resetAccessLog()
        #expect(try reader.read("a-big.bin") == files["a-big.bin"])
        #expect(try nginx.accessLog(waitingFor: 1).reduce(0) { $0 + $1.bodyBytes } >= span.count - 65536)
    }

    /// A large entry goes from the network to the reader through memory, not the mirror file,
    /// and memory holds at most the window; a reader too slow to make room gets the rest
    /// through the file. Either way the bytes are exact.
    @Test(arguments: [PackFormat.zip, .container])
    func largeReadsStreamThroughABoundedWindow(format: PackFormat) throws {
        var files = tree()
        files["b-huge.bin"] = testBytes(6_000_000, seed: 9)
        _ = try pack(files, format, to: "p.pack")
        let nginx = try NginxServer(root: dir.appending("www"))
        var options = Self.options
        options.streamWindow = 2 << 20
        let reader = try RemotePackReader(url: nginx.url("p.pack"), credential: .password("pw"), options: options)
        let span = try #require(reader.local.storedSpan("b-huge.bin"))
        #expect(try reader.read("b-huge.bin") == files["b-huge.bin"])
        #expect(reader.mirror.held.overlap(with: RangeSet([span])) == 0, "streamed bytes went to the file")
        #expect(reader.mirror.windowBytes == 0, "memory kept after the read")
        #expect(reader.mirror.windowPeakBytes <= 2 << 20, "\(reader.mirror.windowPeakBytes) bytes held")
        // Not cached: a second read fetches the span again.
        try nginx.resetAccessLog()
        var streamed: [UInt8] = []
        _ = try reader.stream("b-huge.bin") { streamed += $0 }
        #expect(streamed == files["b-huge.bin"])
        #expect(try nginx.accessLog(waitingFor: 1).reduce(0) { $0 + $1.bodyBytes } == span.count)

        // A reader that stops taking bytes: after the patience the download writes to the file.
        options.streamPatience = 0.01
        let slow = try RemotePackReader(url: nginx.url("p.pack"), credential: .password("pw"), options: options)
        var slowly: [UInt8] = []
        _ = try slow.stream("b-huge.bin") { piece in
            slowly += piece
            Thread.sleep(forTimeInterval: 0.02)
        }
        #expect(slowly == files["b-huge.bin"])
        #expect(slow.mirror.held.overlap(with: RangeSet([span])) > 0, "nothing went to the file")
        #expect(slow.mirror.windowBytes == 0)

        // A read that ends early (its consumer throws) stops its download: nothing of the span
        // goes on into the file.
        struct Stop: Error {}
        let early = try RemotePackReader(url: nginx.url("p.pack"), credential: .password("pw"), options: Self.options)
        #expect(throws: Stop.self) { try early.stream("b-huge.bin") { _ in throw Stop() } }
        Thread.sleep(forTimeInterval: 1)
        #expect(early.mirror.held.overlap(with: RangeSet([span])) == 0, "the download went on into the file")
        #expect(early.mirror.windowBytes == 0)
    }

    /// A container whose chunks are as large as the default window (4 MiB: an average of 1 MiB, so
    /// stored chunks up to 4 MiB) streams without falling back to the file: the window holds two
    /// of the reader's largest reads.
    @Test func chunksAsLargeAsTheWindowStillStream() throws {
        let files = ["a-first.bin": testBytes(200_000, seed: 3), "z-big.bin": testBytes(9_000_000, seed: 4)]
        let source = try dir.write(files, under: "src-chunks")
        var options = PackOptions.forTests
        options.format = .container
        options.credential = .password("pw")
        options.container.chunkSize = 1 << 20
        try FileManager.default.createDirectory(at: dir.appending("www"), withIntermediateDirectories: true)
        try AssetPacks.pack(source: source, to: dir.appending("www/chunks.pack"), options: options)
        let nginx = try NginxServer(root: dir.appending("www"))
        var remote = Self.options
        remote.streamPatience = 5  // a read that cannot fit would wait this long per piece
        let reader = try RemotePackReader(
            url: nginx.url("chunks.pack"), credential: .password("pw"), options: remote)
        let span = try #require(reader.local.storedSpan("z-big.bin"))
        #expect(try reader.read("z-big.bin") == files["z-big.bin"])
        #expect(reader.mirror.held.overlap(with: RangeSet([span])) == 0, "fell back to the file")
    }

    @Test func aServerThatIgnoresRangeIsRefused() throws {
        _ = try pack(tree(), .container, to: "p.pack")
        let nginx = try NginxServer(root: dir.appending("www"), allowRanges: false)
        do {
            _ = try open(nginx.url("p.pack"))
            Issue.record("opened through a server that ignores Range")
        } catch let error as AssetPackError {
            #expect(error.code == .remote)
            #expect(error.message.contains("ignores Range"), "\(error)")
        }
    }

    @Test(arguments: [PackFormat.zip, .container])
    func aFileReplacedMidReadIsRefusedForGood(format: PackFormat) throws {
        let first = try pack(tree(), format, to: "p.pack")
        let nginx = try NginxServer(root: dir.appending("www"))
        let reader = try open(nginx.url("p.pack"))
        #expect(try reader.read("small/s1.bin") == tree()["small/s1.bin"])
        // A new version under the same name (nginx's ETag is mtime and size).
        let replacement = try pack(tree(seed: 2), format, to: "q.pack")
        try FileManager.default.removeItem(at: first)
        try FileManager.default.moveItem(at: replacement, to: first)
        try FileManager.default.setAttributes(
            [.modificationDate: Date().addingTimeInterval(60)], ofItemAtPath: first.path)
        expectCode(.remote, { _ = try reader.read("small/s2.bin") }, "after the change")
        expectCode(.remote, { _ = try reader.read("small/s3.bin") }, "every later read")
    }

    @Test(arguments: [PackFormat.zip, .container])
    func transientFailuresAreRetriedAndPersistentOnesReported(format: PackFormat) throws {
        let files = tree()
        _ = try pack(files, format, to: "p.pack")
        let server = try FaultyHTTPServer(root: dir.appending("www"))
        let url = server.url("p.pack")
        for fault in [
            FaultyHTTPServer.Fault.truncateBody(afterBytes: 1000, times: 2), .dropConnectionBeforeHeaders(times: 2),
            .status503(times: 2),
        ] {
            try server.setFault(fault)
            let reader = try open(url)
            #expect(try reader.read("a-big.bin") == files["a-big.bin"], "\(fault)")
        }
        // A body cut short resumes where it stopped: the retry asks only for the rest.
        try server.setFault(.none)
        let reader = try open(url)
        try server.resetRequests()
        try server.setFault(.truncateBody(afterBytes: 100_000, times: 1))
        #expect(try reader.read("a-big.bin") == files["a-big.bin"])
        let retried = try server.requests(waitingFor: 2)
        #expect(retried.count == 2 && retried[0].range != retried[1].range, "\(retried)")
        // Faults that do not stop: an error, and no bytes.
        try server.setFault(.truncateBody(afterBytes: 1000, times: 1000))
        expectCode(.remote, { _ = try open(url).read("a-big.bin") }, "body always cut")
        try server.setFault(.status503(times: 1000))
        expectCode(.remote, { _ = try open(url) }, "always 503")
        try server.setFault(.ignoreRange)
        expectCode(.remote, { _ = try open(url) }, "Range ignored")
        try server.setFault(.changeETagAfter(requests: 2))  // the open's two requests, then a change
        expectCode(
            .remote,
            {
                let r = try open(url); _ = try r.read("a-big.bin")
            }, "ETag changed")
    }

    /// Apache's first second after a change: a weak ETag, and `If-Range` with it or with the
    /// `Last-Modified` answered with `200`. Reads and installs go on (no `If-Range` is sent with a
    /// weak validator, every response's validators are compared), and the ETag turning strong
    /// (the same opaque tag) is not a change.
    @Test(arguments: [PackFormat.zip, .container])
    func weakValidatorsRightAfterAChangeAreHandled(format: PackFormat) throws {
        let files = tree()
        let local = try pack(files, format, to: "p.pack")
        let server = try FaultyHTTPServer(root: dir.appending("www"), fault: .weakValidators(requests: 4))
        let reader = try open(server.url("p.pack"))
        for (path, bytes) in files { #expect(try reader.read(path) == bytes, "\(path)") }
        try server.setFault(.weakValidators(requests: 3))
        let installer = PrivateInstaller(directory: dir.appending("home"))
        let installed = try installer.installRemote(
            server.url("p.pack"), credential: .password("pw"), options: Self.options)
        #expect(try Data(contentsOf: installed.installation.path) == Data(contentsOf: local))
        // The validators are strong now: the same version, so the install is current.
        let again = try installer.installRemote(
            server.url("p.pack"), credential: .password("pw"), options: Self.options)
        #expect(!again.installation.copied && again.requests == 1, "\(again)")
        // A weak ETag that changes is still a change.
        let changing = try open(server.url("p.pack"))
        try server.setFault(.changeETagAfter(requests: 0))
        expectCode(.remote, { _ = try changing.read("a-big.bin") }, "weak, then another ETag")
    }

    /// A server that answers `If-Range` with `200` though nothing changed: the request is made
    /// again at once without `If-Range` (the validators of the `200` are the pinned ones), and
    /// no later request carries it.
    @Test func aServerThatRefusesIfRangeIsReadWithoutIt() throws {
        let files = tree()
        _ = try pack(files, .container, to: "p.pack")
        let server = try FaultyHTTPServer(root: dir.appending("www"), fault: .refuseIfRange)
        var options = Self.options
        options.retry.attempts = 1  // the retry without If-Range is not a failed attempt
        let reader = try RemotePackReader(url: server.url("p.pack"), credential: .password("pw"), options: options)
        for (path, bytes) in files { #expect(try reader.read(path) == bytes, "\(path)") }
        let log = try server.requests()
        #expect(log.filter { $0.status == 200 }.count <= 1, "\(log)")
    }

    /// A server that caps every `206` (complete, shorter than asked): each response is progress,
    /// not a failed attempt, for reads (streamed and not) and installs; one that sends nothing
    /// still fails after the attempts.
    @Test(arguments: [PackFormat.zip, .container])
    func cappedRangesAreProgressNotFailures(format: PackFormat) throws {
        let files = tree()
        let local = try pack(files, format, to: "p.pack")
        let server = try FaultyHTTPServer(root: dir.appending("www"), fault: .capRanges(bytes: 100_000))
        let reader = try open(server.url("p.pack"))
        for (path, bytes) in files { #expect(try reader.read(path) == bytes, "\(path)") }
        var options = Self.options
        options.streamThreshold = .max  // the big entry through the mirror file too
        let filed = try RemotePackReader(url: server.url("p.pack"), credential: .password("pw"), options: options)
        #expect(try filed.read("a-big.bin") == files["a-big.bin"])
        let installer = PrivateInstaller(directory: dir.appending("home"))
        let installed = try installer.installRemote(
            server.url("p.pack"), credential: .password("pw"), options: Self.options)
        #expect(try Data(contentsOf: installed.installation.path) == Data(contentsOf: local))
        let log = try server.requests().filter { $0.uri == "/p.pack" }
        #expect(log.allSatisfy { $0.status == 206 && $0.bodyBytes <= 100_000 }, "\(log)")
        try server.setFault(.truncateBody(afterBytes: 0, times: 1000))
        expectCode(.remote, { _ = try open(server.url("p.pack")) }, "nothing sent")
    }

    /// A server that ignores `Range`: an install is one whole-file GET into the staging file,
    /// bounded by `Content-Length` and the limit, verified as always; range reads are refused.
    @Test func aServerWithoutRangeIsInstalledWithOneGET() throws {
        let local = try pack(tree(), .zip, to: "p.pack", signed: true)
        let size = try FileSystem.stat(local.path).size
        let server = try FaultyHTTPServer(root: dir.appending("www"), fault: .ignoreRange)
        // The refusals on another name: the server logs a refused response when it stops writing it.
        try FileManager.default.copyItem(at: local, to: dir.appending("www/q.pack"))
        expectCode(.remote, { _ = try open(server.url("q.pack")) }, "a range read")
        let home = dir.appending("home")
        let installer = PrivateInstaller(directory: home, trustedKeys: [publisher.publicKey])
        var limits = ReadLimits.default
        limits.maxPackSize = size - 1
        expectCode(
            .limitExceeded,
            { try installer.installRemote(server.url("q.pack"), limits: limits, options: Self.options) },
            "over the limit")
        // A failed first install leaves no folder; had there been one, nothing of q.pack in it.
        let afterRefusal = (try? FileManager.default.contentsOfDirectory(atPath: home.path)) ?? []
        #expect(afterRefusal.filter { $0.hasPrefix(".q.pack") } == [])
        let result = try installer.installRemote(server.url("p.pack"), options: Self.options)
        #expect(try Data(contentsOf: home.appendingPathComponent("p.pack")) == Data(contentsOf: local))
        #expect(result.installation.publisher == publisher.publicKey)
        // The probe, the download, the `.sha256` lookup.
        #expect(result.downloaded == size && result.requests == 3, "\(result)")
        let log = try server.requests(waitingFor: 3).filter { $0.uri == "/p.pack" }
        // In either order: the server logs the probe's refused answer when it stops writing it,
        // which may be after the download's line.
        #expect(log.map { $0.range ?? "none" }.sorted() == ["bytes=0-0", "none"], "\(log)")
        let again = try installer.installRemote(server.url("p.pack"), options: Self.options)
        #expect(!again.installation.copied && again.requests == 1, "\(again)")
        // A published SHA-256 that does not match: refused, and the download is not kept.
        try Data("\(String(repeating: "0", count: 64))  p.pack\n".utf8).write(to: dir.appending("www/p.pack.sha256"))
        let other = PrivateInstaller(directory: dir.appending("home2"))
        expectCode(.integrityFailure, { try other.installRemote(server.url("p.pack"), options: Self.options) })
        // (A failed first install removes the folder it made.)
        let left = (try? FileManager.default.contentsOfDirectory(atPath: dir.appending("home2").path)) ?? []
        #expect(!left.contains("p.pack") && !left.contains(".p.pack.download"), "\(left)")
    }

    @Test(arguments: [PackFormat.zip, .container])
    func corruptOrTruncatedBytesNeverComeBackAsData(format: PackFormat) throws {
        let files = tree()
        let local = try pack(files, format, to: "p.pack")
        let server = try FaultyHTTPServer(root: dir.appending("www"))
        let reader = try open(server.url("p.pack"))
        let span = try #require(reader.local.storedSpan("a-big.bin"))
        try server.setFault(.corruptByte(offsetInFile: Int(span.lowerBound) + 200_000))
        expectCode(.integrityFailure, { _ = try reader.read("a-big.bin") }, "a flipped byte")
        // A pack cut short on the server.
        try server.setFault(.none)
        let bytes = try Data(contentsOf: local)
        try bytes.prefix(bytes.count - 100).write(to: dir.appending("www/cut.pack"))
        do {
            _ = try open(server.url("cut.pack")).read("small/s39.bin")
            Issue.record("a truncated pack read")
        } catch let error as AssetPackError {
            #expect([.integrityFailure, .unsupportedFormat].contains(error.code), "\(error)")
        }
    }
}
#endif
