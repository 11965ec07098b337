#if SystemLibraries  // the default configuration only: see Package.swift
import AssetPack
import AssetPackHTTP
import AssetPackRemote
import AssetPackTestSupport
import Foundation
import Testing

/// The remote logic in-process: reads, retries, resumes, installs and deltas against an
/// ``InMemoryHTTPServer``, with no server started and no socket (the fast tier runs them). What
/// real servers do is the conformance tier's (RemoteTests, ServerConformanceTests, against nginx,
/// Apache, lighttpd and the fault server); these pin the client's side of the same contract.
@Suite struct InMemoryRemoteTests {
    let dir = TemporaryDirectory("in-memory")
    let server = InMemoryHTTPServer()

    var options: RemoteMirror.Options {
        var o = RemoteMirror.Options()
        o.retry.initialDelay = 0.001
        o.streamThreshold = 1 << 20
        o.inMemoryServer = server
        return o
    }

    func tree(seed: UInt64 = 1) -> [String: [UInt8]] {
        var files: [String: [UInt8]] = [
            "a-big.bin": testBytes(1_500_000, seed: seed), "empty": [],
            "text/readme.txt": textBytes(30_000, seed: seed),
        ]
        for i in 0..<20 { files["small/s\(i).bin"] = testBytes(4096, seed: seed &+ UInt64(i) &+ 100) }
        return files
    }

    /// Packs `files` (signed by `key`, when given) and serves the pack at `name`.
    @discardableResult
    func serve(
        _ files: [String: [UInt8]], _ format: PackFormat, as name: String = "p.pack",
        signedBy key: PublisherSigningKey? = nil
    ) throws -> URL {
        let local = try dir.packForServing(files, format, to: name, signingKey: key)
        try server.put(name, contentsOf: local)
        return local
    }

    func open(_ name: String = "p.pack") throws -> RemotePackReader {
        try RemotePackReader(url: server.url(name), credential: .password("pw"), options: options)
    }

    @Test(arguments: PackFormat.allCases)
    func everyEntryReadsAsItDoesLocally(format: PackFormat) throws {
        let files = tree()
        let local = try serve(files, format)
        let reader = try open()
        #expect(reader.entries == (try AssetPacks.open(local.path, credential: .password("pw"))).entries)
        for (path, bytes) in files { #expect(try reader.read(path) == bytes, "\(path)") }
        #expect(server.requests.allSatisfy { $0.status == 206 }, "\(server.requests)")
    }

    /// 503s, cut connections and capped responses are what networks do: the bytes come right,
    /// with the requests the faults cost.
    @Test(
        arguments: PackFormat.allCases,
        [
            InMemoryHTTPServer.Fault.status503(times: 2), .cutAfter(bytes: 10_000, times: 3),
            .capResponses(bytes: 100_000),
        ])
    func transientFaultsAreRetriedAndTheBytesComeRight(format: PackFormat, fault: InMemoryHTTPServer.Fault) throws {
        let files = tree()
        try serve(files, format)
        let reader = try open()
        server.resetRequests()
        server.setFault(fault)
        #expect(try reader.read("a-big.bin") == files["a-big.bin"])
        let statuses = server.requests.map(\.status)
        switch fault {
        case .status503:
            #expect(statuses.filter { $0 == 503 }.count == 2 && statuses.filter { $0 != 503 }.allSatisfy { $0 == 206 })
        case .capResponses:
            #expect(statuses.count >= 15 && statuses.allSatisfy { $0 == 206 }, "\(statuses)")
            #expect(server.requests.allSatisfy { $0.bodyBytes <= 100_000 })
        default: #expect(statuses.count >= 4, "\(statuses)")
        }
    }

    /// A file replaced on the server between two reads is refused (`.remote`, "changed"), never
    /// mixed into the bytes of the version the reader opened.
    @Test(arguments: PackFormat.allCases)
    func aFileThatChangesUnderTheReaderIsRefused(format: PackFormat) throws {
        try serve(tree(), format)
        let reader = try open()
        try serve(tree(seed: 2), format)
        do {
            _ = try reader.read("a-big.bin")
            Issue.record("read bytes of another version")
        } catch let error as AssetPackError {
            #expect(error.code == .remote && error.message.contains("changed"), "\(error)")
        }
    }

    /// An install from a URL: copied once, then current in one request; a new version of the
    /// signed pack is downloaded as a delta (a container's unchanged chunks, a zip's unchanged
    /// entries copied from the installed pack, or the container updated in place), verified, and
    /// reads back.
    @Test(arguments: PackFormat.allCases)
    func anInstallIsCurrentThenUpdatedAsADelta(format: PackFormat) throws {
        var files = tree()
        let key = PublisherSigningKey.generate()
        try serve(files, format, signedBy: key)
        let installer = PrivateInstaller(directory: dir.appending("home"))
        let first = try installer.installRemote(server.url("p.pack"), credential: .password("pw"), options: options)
        #expect(first.installation.copied)
        let again = try installer.installRemote(server.url("p.pack"), credential: .password("pw"), options: options)
        #expect(!again.installation.copied && again.requests == 1, "\(again)")
        files["text/readme.txt"] = textBytes(30_001, seed: 9)
        try serve(files, format, signedBy: key)
        let update = try installer.installRemote(server.url("p.pack"), credential: .password("pw"), options: options)
        #expect(update.installation.copied)
        #expect(update.reused > 1_000_000 && update.downloaded < 500_000, "\(update)")
        let installed = try AssetPacks.open(update.installation.path.path, credential: .password("pw"))
        for (path, bytes) in files { #expect(try installed.read(path) == bytes, "\(path)") }
    }

    /// A container appended on the server by 0.3, which left its earlier index as it was rather
    /// than zeroing it: the installed copy is updated in place as the server has it, earlier
    /// index included, so that it ends the server's file byte for byte (the installer reads 32
    /// bytes where the installed index was to tell); one appended by a publisher that zeroes
    /// ends with the zeros (and UpdateInPlaceCLITests zeroes what an edit replaced).
    @Test(arguments: [false, true]) func anUpdateInPlaceEndsTheServersBytesWhetherItsPublisherZeroed(zeroed: Bool)
        throws
    {
        var files = tree()
        let local = try serve(files, .container)
        let installer = PrivateInstaller(directory: dir.appending("home"))
        let first = try installer.installRemote(server.url("p.pack"), credential: .password("pw"), options: options)
        let v1 = [UInt8](try Data(contentsOf: local))
        files["text/added.txt"] = textBytes(30_000, seed: 4)
        _ = try dir.packForServing(files, .container, to: "p.pack")
        var v2 = [UInt8](try Data(contentsOf: local))
        let zeros = (8192..<v1.count).filter { v2[$0] == 0 && v1[$0] != 0 }
        #expect(zeros.count > 100, "the re-pack zeroed the earlier index")
        if !zeroed {
            for p in zeros { v2[p] = v1[p] }  // as 0.3 left it
            try Data(v2).write(to: local)
        }
        try server.put("p.pack", contentsOf: local)
        let update = try installer.installRemote(server.url("p.pack"), credential: .password("pw"), options: options)
        #expect(update.updatedInPlace, "\(update)")
        #expect(update.installation.path == first.installation.path)
        // The tail, both header slots (the first request) and the 32 bytes that tell: not the
        // earlier index (the probe's first version joined it to the tail's request).
        #expect(update.downloaded < UInt64(v2.count - v1.count) + 4224 + 1024, "\(update)")
        let installed = [UInt8](try Data(contentsOf: update.installation.path))
        #expect(installed.count == v2.count && installed[8192...] == v2[8192...])
        let reader = try AssetPacks.open(update.installation.path.path, credential: .password("pw"))
        for (path, bytes) in files { #expect(try reader.read(path) == bytes, "\(path)") }
    }

    /// A server that ignores `Range` answers the first request with the whole file: the install
    /// takes it in that one response, verified as any other.
    @Test(arguments: PackFormat.allCases)
    func aServerThatIgnoresRangeIsInstalledWhole(format: PackFormat) throws {
        let files = tree()
        let local = try serve(files, format)
        server.setFault(.ignoreRange)
        let installer = PrivateInstaller(directory: dir.appending("home"))
        let result = try installer.installRemote(server.url("p.pack"), credential: .password("pw"), options: options)
        #expect(result.rangesIgnored && result.installation.copied, "\(result)")
        #expect(try Data(contentsOf: result.installation.path) == Data(contentsOf: local))
    }

    /// A pack the server does not have is `.remote`, naming the status, and nothing is installed.
    @Test func aMissingPackIsRemoteAndInstallsNothing() throws {
        let installer = PrivateInstaller(directory: dir.appending("home"))
        do {
            _ = try installer.installRemote(server.url("none.pack"), options: options)
            Issue.record("installed a pack the server does not have")
        } catch let error as AssetPackError {
            #expect(error.code == .remote && error.message.contains("404"), "\(error)")
        }
        #expect(!FileManager.default.fileExists(atPath: dir.appending("home").path))
    }
}
#endif
