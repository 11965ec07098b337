#if SystemLibraries  // the default configuration only: see Package.swift
import AssetPack
import AssetPackHTTP
import AssetPackRemote
import AssetPackTestSupport
import Foundation
import Testing

/// The update path against the attacks of The Update Framework's threat model that need a
/// hostile or broken server: endless data, slow retrieval, a pack replaced under the same
/// validators while it downloads (a torn install), and a caller that gives up (cancellation).
/// docs/SECURITY.md, "Update attacks", lists each with its defence and test.
@Suite(.serialized, .slow) struct UpdateSafetyTests {
    let dir = TemporaryDirectory("update-safety")

    static var options: RemoteMirror.Options {
        var o = RemoteMirror.Options()
        o.retry.initialDelay = 0.01
        return o
    }

    /// Fast deadlines: a test against a dripping server fails within about two seconds.
    static var fastLimits: TransferLimits {
        TransferLimits(connectTimeout: 5, requestTimeout: 30, minimumRate: 4096, rateWindow: 1)
    }

    @discardableResult
    func pack(_ files: [String: [UInt8]], to name: String, format: PackFormat = .container) throws -> URL {
        try dir.packForServing(files, format, to: name)
    }

    /// The names in the install directory other than the lock file.
    func leftovers(_ directory: URL) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? [])
            .filter { $0 != ".assetpack.lock" }.sorted()
    }

    func expectError(_ code: AssetPackError.Code, containing text: String, _ body: () throws -> Void) {
        do {
            try body()
            Issue.record("no error; expected \(code) mentioning '\(text)'")
        } catch let error as AssetPackError {
            #expect(error.code == code, "\(error)")
            #expect(error.message.contains(text), "\(error)")
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    // MARK: - Endless data

    @Test(arguments: [PackFormat.zip, .container])
    func aServerClaimingAHugeFileWritesNothing(format: PackFormat) throws {
        try pack(["a.bin": testBytes(100_000, seed: 1)], to: "p", format: format)
        let server = try FaultyHTTPServer(root: dir.appending("www"))
        let into = dir.appending("into-\(format)")
        let installer = PrivateInstaller(directory: into)
        for claim: UInt64 in [8 << 40, 1 << 50] {
            try server.setFault(.claimSize(claim))
            // Over ReadLimits.maxPackSize: refused on the first response.
            expectError(.limitExceeded, containing: "maxPackSize") {
                try installer.installRemote(server.url("p"), credential: .password("pw"), options: Self.options)
            }
            #expect(leftovers(into).isEmpty, "\(leftovers(into))")
            // Under a raised limit, the free space of the file system refuses it.
            var limits = ReadLimits.default
            limits.maxPackSize = .max
            expectError(.io, containing: "not enough space") {
                try installer.installRemote(
                    server.url("p"), credential: .password("pw"), limits: limits, options: Self.options)
            }
            #expect(leftovers(into).isEmpty, "\(leftovers(into))")
            // Remote reads refuse it the same way, before a mirror file exists.
            expectError(.limitExceeded, containing: "maxPackSize") {
                _ = try RemotePackReader(url: server.url("p"), credential: .password("pw"), options: Self.options)
            }
        }
        let sent = try server.requests().reduce(0) { $0 + $1.bodyBytes }
        #expect(sent < 1 << 20, "the server sent \(sent) bytes")
    }

    /// The disk fills up in the middle of a download (something else took the space after the
    /// free-space check): the install fails with `.io` and leaves nothing of its own behind.
    @Test(.enabled(if: SmallFileSystem.isAvailable, "needs root to mount a small tmpfs"))
    func aDiskThatFillsDuringTheDownloadLeavesNothing() throws {
        try pack(["a.bin": testBytes(2_500_000, seed: 12)], to: "p")
        let server = try FaultyHTTPServer(root: dir.appending("www"))
        let disk = try SmallFileSystem(megabytes: 4)
        let into = disk.url.appendingPathComponent("private")
        var options = Self.options
        options.maxRequest = 256 << 10
        options.parallelRequests = 1
        let filled = Flag()
        let filler = disk.url.appendingPathComponent("filler")
        expectError(.io, containing: "No space left") {
            try PrivateInstaller(directory: into).installRemote(
                server.url("p"), credential: .password("pw"), options: options,
                progress: { done, _ in
                    guard done > 0, filled.setOnce() else { return }
                    // Another process takes what is left of the disk.
                    _ = FileManager.default.createFile(atPath: filler.path, contents: Data(count: 3_000_000))
                })
        }
        #expect(filled.isSet)
        #expect(leftovers(into).isEmpty, "\(leftovers(into))")
    }

    /// An update in place needs room for what it appends, not for the whole pack again: a
    /// device whose disk holds the installed pack and little more still takes the update.
    @Test(.enabled(if: SmallFileSystem.isAvailable, "needs root to mount a small tmpfs"))
    func anUpdateInPlaceNeedsRoomOnlyForWhatItAppends() throws {
        let big = testBytes(2_500_000, seed: 21)
        let out = try pack(["big.bin": big], to: "p")
        let server = try FaultyHTTPServer(root: dir.appending("www"))
        let disk = try SmallFileSystem(megabytes: 4)
        let installer = PrivateInstaller(directory: disk.url.appendingPathComponent("private"))
        try installer.installRemote(server.url("p"), credential: .password("pw"), options: Self.options)
        // A file added: appended to the served pack (an edit would rewrite it).
        try pack(["big.bin": big, "added.bin": testBytes(100_000, seed: 24)], to: "p")
        try FileManager.default.setAttributes(
            [.modificationDate: Date().addingTimeInterval(60)], ofItemAtPath: out.path)
        // 1.5 MB free: not enough for a second copy of the 2.5 MB pack.
        let update = try installer.installRemote(server.url("p"), credential: .password("pw"), options: Self.options)
        #expect(update.updatedInPlace && update.written < 1 << 20, "\(update)")
        #expect(
            try Data(contentsOf: disk.url.appendingPathComponent("private/p")) == Data(contentsOf: out))
        // A whole download still needs room for all of it, checked before it starts.
        try pack(["big.bin": testBytes(2_500_000, seed: 22)], to: "other")
        expectError(.io, containing: "not enough space") {
            try installer.installRemote(
                server.url("other"), as: "p", credential: .password("pw"), options: Self.options)
        }
        #expect(leftovers(disk.url.appendingPathComponent("private")).filter { !$0.hasPrefix(".p.install") } == ["p"])
    }

    /// An installed pack with another hard link is not updated in place (that would change the
    /// other name's bytes too): it is downloaded into a new file and renamed, as before version 6.
    @Test func aHardLinkedInstalledPackIsReplacedNotUpdatedInPlace() throws {
        let big = testBytes(600_000, seed: 23)
        let out = try pack(["big.bin": big], to: "p")
        let server = try FaultyHTTPServer(root: dir.appending("www"))
        let into = dir.appending("into")
        let installer = PrivateInstaller(directory: into)
        try installer.installRemote(server.url("p"), credential: .password("pw"), options: Self.options)
        let installed = into.appendingPathComponent("p")
        let before = try Data(contentsOf: installed)
        let link = dir.appending("backup-of-p")
        try FileManager.default.linkItem(at: installed, to: link)
        try pack(["big.bin": big, "added.bin": testBytes(100_000, seed: 25)], to: "p")  // appended to the served pack
        try FileManager.default.setAttributes(
            [.modificationDate: Date().addingTimeInterval(60)], ofItemAtPath: out.path)
        let update = try installer.installRemote(server.url("p"), credential: .password("pw"), options: Self.options)
        #expect(!update.updatedInPlace, "\(update)")
        #expect(try Data(contentsOf: installed) == Data(contentsOf: out))
        #expect(try Data(contentsOf: link) == before, "the other name's pack changed")
    }

    // MARK: - Slow retrieval

    @Test func aDrippingServerFailsWithinTheRateWindow() throws {
        try pack(["a.bin": testBytes(300_000, seed: 2)], to: "p")
        let server = try FaultyHTTPServer(root: dir.appending("www"))
        try server.setFault(.drip(bytesPerSecond: 4))
        var options = Self.options
        options.transfer = Self.fastLimits
        let started = Date()
        expectError(.remote, containing: "minimum rate") {
            _ = try RemotePackReader(url: server.url("p"), credential: .password("pw"), options: options)
        }
        // One window (1 s), checked about once a second by libcurl, and no retry of a drip.
        #expect(Date().timeIntervalSince(started) < 5)
    }

    @Test func aResponseThatStopsHalfWayFailsWithinTheRateWindow() throws {
        try pack(["a.bin": testBytes(300_000, seed: 3)], to: "p")
        let server = try FaultyHTTPServer(root: dir.appending("www"))
        let into = dir.appending("into")
        var options = Self.options
        options.transfer = Self.fastLimits
        options.maxRequest = 128 << 10
        try server.setFault(.stallAfter(bytes: 1000))
        let started = Date()
        expectError(.remote, containing: "minimum rate") {
            try PrivateInstaller(directory: into).installRemote(
                server.url("p"), credential: .password("pw"), options: options)
        }
        #expect(Date().timeIntervalSince(started) < 5)
    }

    @Test func aRequestPastItsDeadlineFails() throws {
        try pack(["a.bin": testBytes(300_000, seed: 4)], to: "p")
        let server = try FaultyHTTPServer(root: dir.appending("www"))
        var options = Self.options
        // 64 KiB/s is above the minimum rate; the 300 KB body takes 5 s, past a 2 s deadline.
        options.transfer = TransferLimits(connectTimeout: 5, requestTimeout: 2, minimumRate: 1024, rateWindow: 1)
        options.maxRequest = 1 << 20
        options.probeSize = 1 << 20
        try server.setFault(.drip(bytesPerSecond: 64 << 10))
        let started = Date()
        expectError(.remote, containing: "deadline of 2 s") {
            _ = try RemotePackReader(url: server.url("p"), credential: .password("pw"), options: options)
        }
        #expect(Date().timeIntervalSince(started) < 6)
    }

    /// A server that answers every request at once but with a few bytes (a capped 206 after a
    /// second): each request is whole and quick, so only a rate across the requests sees the drip.
    @Test func tinyCappedAnswersAreADripToo() throws {
        try pack(["a.bin": testBytes(300_000, seed: 13)], to: "p")
        let server = try FaultyHTTPServer(root: dir.appending("www"))
        try server.setFault(.capRangesSlowly(bytes: 100, seconds: 1))
        var options = Self.options
        // Each answer takes 1 s, less than the 3 s window: no single request is judged slow.
        options.transfer = TransferLimits(connectTimeout: 5, requestTimeout: 30, minimumRate: 4096, rateWindow: 3)
        let started = Date()
        expectError(.remote, containing: "over several requests") {
            _ = try RemotePackReader(url: server.url("p"), credential: .password("pw"), options: options)
        }
        #expect(Date().timeIntervalSince(started) < 8)
    }

    // MARK: - Rollback and freeze through the update path

    /// Versions `versions` of one signed zip, re-packed to one output so that their entries are
    /// byte for byte the same (a delta between them reuses every entry span).
    func signedReleases(_ versions: [UInt64], key: PublisherSigningKey) throws -> [UInt64: Data] {
        let source = dir.appending("src-releases")
        _ = try dir.write(["a.bin": testBytes(300_000, seed: 14), "b.txt": Array("b".utf8)], under: "src-releases")
        let out = dir.appending("releases/p")
        try FileManager.default.createDirectory(at: dir.appending("releases"), withIntermediateDirectories: true)
        var packs: [UInt64: Data] = [:]
        for version in versions {
            var options = PackOptions.forTests
            options.format = .zip
            options.credential = .password("pw")
            options.signingKey = key
            options.releaseVersion = version
            options.allowRollback = true  // [4, 5, 3]: the server goes back a release
            try AssetPacks.pack(source: source, to: out, options: options)
            packs[version] = try Data(contentsOf: out)
        }
        return packs
    }

    /// A delta that fails its check is downloaded again whole; if the server now holds an older
    /// release (same size, same validators), that release must be refused as a rollback, not
    /// installed under the version checked before the first download.
    @Test func aFullDownloadAfterAFailedDeltaIsCheckedForRollback() throws {
        let key = PublisherSigningKey.generate()
        let packs = try signedReleases([4, 5, 3], key: key)
        let (v4, v5, v3) = (packs[4]!, packs[5]!, packs[3]!)
        #expect(v3.count == v5.count)
        let served = dir.appending("www/p")
        try FileManager.default.createDirectory(at: dir.appending("www"), withIntermediateDirectories: true)
        try v4.write(to: served)
        let server = try FaultyHTTPServer(root: dir.appending("www"))
        let into = dir.appending("into")
        let installer = PrivateInstaller(directory: into, trustedKeys: [key.publicKey])
        try installer.installRemote(server.url("p"), credential: .password("pw"), options: Self.options)

        try v5.write(to: served)
        let mtime = Date(timeIntervalSinceNow: -600)
        try FileManager.default.setAttributes([.modificationDate: mtime], ofItemAtPath: served.path)
        // A .sha256 that the delta's v5 fails and v3 passes.
        try v3.write(to: dir.appending("releases/v3"))
        let v3Digest = try PrivateInstaller.sha256(of: dir.appending("releases/v3").path)
        try Data("\(v3Digest)  p\n".utf8).write(to: dir.appending("www/p.sha256"))
        let sawBytes = Flag()
        let swapped = Flag()
        expectError(.untrusted, containing: "rollback") {
            try installer.installRemote(
                server.url("p"), credential: .password("pw"), options: Self.options,
                progress: { done, _ in
                    if done > 0 { _ = sawBytes.setOnce() }
                    // The full download starts from zero: v3 takes v5's place, same validators.
                    guard done == 0, sawBytes.isSet, swapped.setOnce() else { return }
                    try? v3.write(to: served)
                    try? FileManager.default.setAttributes([.modificationDate: mtime], ofItemAtPath: served.path)
                })
        }
        #expect(swapped.isSet, "the delta was not retried whole")
        #expect(try Data(contentsOf: into.appendingPathComponent("p")) == v4)
    }

    /// Versions `versions` of one signed zip at `www/p`, each of the files `files(version)`,
    /// re-packed over the one before (unchanged entries keep their bytes).
    func signedZips(_ versions: [UInt64], key: PublisherSigningKey, files: (UInt64) -> [String: [UInt8]]) throws
        -> [UInt64: Data]
    {
        let out = dir.appending("www/p")
        try FileManager.default.createDirectory(at: dir.appending("www"), withIntermediateDirectories: true)
        var packs: [UInt64: Data] = [:]
        for version in versions {
            let source = try dir.write(files(version), under: "src-signed-zips")
            var options = PackOptions.forTests
            options.format = .zip
            options.credential = .password("pw")
            options.signingKey = key
            options.releaseVersion = version
            try AssetPacks.pack(source: source, to: out, options: options)
            packs[version] = try Data(contentsOf: out)
        }
        return packs
    }

    /// A signed delta reuses a span of the installed pack only if its SHA-256 is the one the
    /// signature lists: a span damaged on the device is downloaded, the intact one reused, and
    /// the update repairs the pack (reusing the damaged span would fail the signature and cost a
    /// whole download).
    @Test func aDamagedSpanOfTheInstalledPackIsNotReused() throws {
        let key = PublisherSigningKey.generate()
        let packs = try signedZips([4, 5], key: key) { _ in
            ["a.bin": testBytes(300_000, seed: 31), "c.bin": testBytes(300_000, seed: 32)]
        }
        let served = dir.appending("www/p")
        try packs[4]!.write(to: served)
        let server = try FaultyHTTPServer(root: dir.appending("www"))
        let into = dir.appending("into")
        let installer = PrivateInstaller(directory: into, trustedKeys: [key.publicKey])
        try installer.installRemote(server.url("p"), credential: .password("pw"), options: Self.options)
        // One bit of a.bin's data (the first entry) flips on the device; the server moves on to version 5.
        let installed = into.appendingPathComponent("p")
        var damaged = try Data(contentsOf: installed)
        damaged[2000] ^= 0x40
        try damaged.write(to: installed)
        try packs[5]!.write(to: served)
        // Another mtime than version 4's, so that the server's validators say it changed.
        try FileManager.default.setAttributes(
            [.modificationDate: Date(timeIntervalSinceNow: -600)], ofItemAtPath: served.path)
        let result = try installer.installRemote(server.url("p"), credential: .password("pw"), options: Self.options)
        #expect(try Data(contentsOf: installed) == packs[5]!)
        #expect(result.installation.publisher == key.publicKey)
        // a.bin downloaded (with the 64 KiB probe), c.bin reused: about 60 % of the pack, not all of it.
        #expect(result.reused >= 300_000, "\(result)")
        #expect(result.downloaded < UInt64(packs[5]!.count) * 7 / 10, "\(result)")
    }

    /// A pack replaced on the server under the same validators while a trusted delta downloads
    /// it: the assembled file fails its signature (`.untrusted` with trusted keys, not
    /// `.integrityFailure`), and the install downloads the pack whole once, as it does without
    /// trusted keys, and installs the newer release it finds.
    @Test func aTrustedDeltaTornByTheServerIsDownloadedWhole() throws {
        let key = PublisherSigningKey.generate()
        let out = dir.appending("www/p")
        // a.bin stays (the re-pack keeps its bytes, and the delta reuses them); b.bin changes, at one size.
        let packs = try signedZips([4, 5, 6], key: key) {
            ["a.bin": testBytes(300_000, seed: 30), "b.bin": testBytes(400_000, seed: 30 + $0)]
        }
        #expect(packs[5]!.count == packs[6]!.count, "the two versions must be the same size")
        try packs[4]!.write(to: out)
        let server = try FaultyHTTPServer(root: dir.appending("www"))
        let into = dir.appending("into")
        let installer = PrivateInstaller(directory: into, trustedKeys: [key.publicKey])
        try installer.installRemote(server.url("p"), credential: .password("pw"), options: Self.options)

        try packs[5]!.write(to: out)
        let mtime = Date(timeIntervalSinceNow: -600)
        try FileManager.default.setAttributes([.modificationDate: mtime], ofItemAtPath: out.path)
        var options = Self.options
        options.maxRequest = 64 << 10
        options.parallelRequests = 1
        options.saveInterval = 64 << 10
        let replaced = Flag()
        let v6 = packs[6]!
        let result = try installer.installRemote(
            server.url("p"), credential: .password("pw"), options: options,
            progress: { done, _ in
                // After the first bytes of b.bin: version 6 takes 5's place, same size and mtime.
                guard done > 0, replaced.setOnce() else { return }
                try? v6.write(to: out)
                try? FileManager.default.setAttributes([.modificationDate: mtime], ofItemAtPath: out.path)
            })
        #expect(replaced.isSet)
        #expect(try Data(contentsOf: into.appendingPathComponent("p")) == v6)
        #expect(result.installation.publisher == key.publicKey)
        // The pack, its install record and the release record; no staging file.
        #expect(leftovers(into) == [".assetpack.releases", ".p.install", "p"])
    }

    /// A frozen server keeps offering the installed pack: once its signature has expired, an
    /// install that finds it current refuses it (local and remote).
    @Test func anExpiredInstalledPackIsNotCurrent() throws {
        let key = PublisherSigningKey.generate()
        let source = dir.appending("src-expiring")
        _ = try dir.write(["a.txt": Array("a".utf8)], under: "src-expiring")
        var options = PackOptions.forTests
        options.format = .container
        options.credential = .password("pw")
        options.signingKey = key
        options.releaseVersion = 1
        options.releaseExpires = Date(timeIntervalSinceNow: 3600)
        let pack = dir.appending("www/e.apack")
        try FileManager.default.createDirectory(at: dir.appending("www"), withIntermediateDirectories: true)
        try AssetPacks.pack(source: source, to: pack, options: options)
        let server = try FaultyHTTPServer(root: dir.appending("www"))
        var installer = PrivateInstaller(directory: dir.appending("remote"), trustedKeys: [key.publicKey])
        try installer.installRemote(server.url("e.apack"), credential: .password("pw"), options: Self.options)
        var local = PrivateInstaller(directory: dir.appending("local"), trustedKeys: [key.publicKey])
        try local.install(pack)
        // Two hours later, the same server file and the same bundled pack.
        installer.clock = { Date(timeIntervalSinceNow: 7200) }
        local.clock = installer.clock
        expectError(.untrusted, containing: "expired") {
            try installer.installRemote(server.url("e.apack"), credential: .password("pw"), options: Self.options)
        }
        expectError(.untrusted, containing: "expired") { try local.install(pack) }
        // A new version (on the server, and bundled by an app update) replaces the expired one:
        // the expiry of the installed pack only matters when it is what the source holds.
        _ = try dir.write(["a.txt": Array("version 2".utf8)], under: "src-expiring")  // another size: other validators
        options.releaseVersion = 2
        options.releaseExpires = Date(timeIntervalSinceNow: 4 * 3600)
        try AssetPacks.pack(source: source, to: pack, options: options)
        #expect(try local.install(pack).copied)
        #expect(try installer.installRemote(server.url("e.apack"), options: Self.options).installation.copied)
    }
}

/// A flag set once, from any thread.
final class Flag: @unchecked Sendable {
    private let lock = NSLock()
    private var set = false
    /// Sets the flag; whether this call was the one that set it.
    func setOnce() -> Bool {
        lock.withLock {
            defer { set = true }
            return !set
        }
    }
    var isSet: Bool { lock.withLock { set } }
}
#endif
