#if SystemLibraries  // the default configuration only: see Package.swift
import AssetPack
import AssetPackHTTP
import AssetPackRemote
import AssetPackTestSupport
import Foundation
import Testing

/// UpdateSafetyTests, continued: never two versions in one install, and cancellation.
extension UpdateSafetyTests {
    // MARK: - Never two versions

    /// An unsigned pack replaced on the server during the install by another version of the
    /// same size and mtime (so the same nginx-style ETag): the install must not succeed.
    @Test(arguments: [PackFormat.zip, .container])
    func aPackReplacedUnderTheSameETagIsNeverInstalled(format: PackFormat) throws {
        let base: [String: [UInt8]] = [
            "a.bin": testBytes(400_000, seed: 5), "b.bin": testBytes(400_000, seed: 6),
        ]
        let v1 = try pack(base, to: "p", format: format)
        let v1Bytes = try Data(contentsOf: v1)
        let v2Bytes: Data
        do {
            var changed = base
            changed["b.bin"] = testBytes(400_000, seed: 7)
            let v2 = try pack(changed, to: "p2", format: format)
            v2Bytes = try Data(contentsOf: v2)
            #expect(v2Bytes.count == v1Bytes.count, "the two versions must be the same size")
        }
        let mtime = try FileManager.default.attributesOfItem(atPath: v1.path)[.modificationDate] as! Date
        let server = try FaultyHTTPServer(root: dir.appending("www"))
        var options = Self.options
        options.maxRequest = 64 << 10
        options.parallelRequests = 1
        options.saveInterval = 64 << 10
        let replaced = Flag()
        let into = dir.appending("into-\(format)")
        expectError(.integrityFailure, containing: "does not read back") {
            try PrivateInstaller(directory: into).installRemote(
                server.url("p"), credential: .password("pw"), options: options,
                progress: { done, _ in
                    // After the first bytes: v2 takes v1's place, same size and mtime.
                    guard done > 0, replaced.setOnce() else { return }
                    try? v2Bytes.write(to: v1)
                    try? FileManager.default.setAttributes([.modificationDate: mtime], ofItemAtPath: v1.path)
                })
        }
        #expect(replaced.isSet)
        #expect(leftovers(into).isEmpty, "\(leftovers(into))")
    }

    @Test func anUnsignedPackNothingCanCheckIsRefusedBeforeTheDownload() throws {
        try pack(["a.bin": testBytes(300_000, seed: 8)], to: "p")
        let server = try FaultyHTTPServer(root: dir.appending("www"))
        let into = dir.appending("into")
        expectError(.missingPassword, containing: "not signed") {
            try PrivateInstaller(directory: into).installRemote(server.url("p"), options: Self.options)
        }
        #expect(leftovers(into).isEmpty, "\(leftovers(into))")
        let sent = try server.requests().reduce(0) { $0 + $1.bodyBytes }
        #expect(sent < 100_000, "the server sent \(sent) bytes")
        // With a published SHA-256 the same install goes ahead.
        let digest = try PrivateInstaller.sha256(of: dir.appending("www/p").path)
        try Data("\(digest)  p\n".utf8).write(to: dir.appending("www/p.sha256"))
        let installed = try PrivateInstaller(directory: into).installRemote(server.url("p"), options: Self.options)
        #expect(installed.installation.sha256 == digest)
    }

    // MARK: - Cancellation

    /// How soon a cancelled transfer must have stopped. It stops within about a second; the bound
    /// leaves room for a loaded machine under ThreadSanitizer (4.2 s seen with both cores busy)
    /// and still fails a transfer that runs on: at these tests' pace the rest takes 40 s or more.
    static let stopsWithin: TimeInterval = 10

    @Test func cancellingAnInstallStopsTheDownloadAndLeavesNothing() async throws {
        try pack(["a.bin": testBytes(3_000_000, seed: 9)], to: "p")
        let server = try FaultyHTTPServer(root: dir.appending("www"))
        try server.setFault(.drip(bytesPerSecond: 64 << 10))
        let into = dir.appending("into")
        let installer = PrivateInstaller(directory: into)
        let url = server.url("p")
        let task = Task {
            try await installer.install(from: url, credential: .password("pw"))
        }
        try await Task.sleep(for: .seconds(1.5))
        let cancelledAt = Date()
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(Date().timeIntervalSince(cancelledAt) < Self.stopsWithin, "the install took too long to stop")
        #expect(leftovers(into).isEmpty, "\(leftovers(into))")
        // Bytes sent after the cancel: the server notices the closed connection within a
        // second or two of its pace (64 KiB/s), far below the 3 MB pack.
        try await Task.sleep(for: .seconds(2.5))
        let sent = try server.requests(timeout: 5).reduce(0) { $0 + $1.bodyBytes }
        #expect(sent < 512 << 10, "the server sent \(sent) bytes")
    }

    @Test func cancellingARemoteOpenStopsIt() async throws {
        try pack(["a.bin": testBytes(300_000, seed: 10)], to: "p")
        let server = try FaultyHTTPServer(root: dir.appending("www"))
        try server.setFault(.drip(bytesPerSecond: 1024))
        let url = server.url("p")
        let task = Task { try await AssetPacks.open(url: url, credential: .password("pw")) }
        try await Task.sleep(for: .seconds(1))
        let cancelledAt = Date()
        task.cancel()
        await #expect(throws: CancellationError.self) { _ = try await task.value }
        #expect(Date().timeIntervalSince(cancelledAt) < Self.stopsWithin)
    }

    @Test(arguments: [PackFormat.zip, .container], [200_000, 3_000_000])
    func cancellingARemoteReadStopsIt(format: PackFormat, size: Int) async throws {
        // A small entry is fetched into the mirror file; a large one streams through memory.
        try pack(["a.bin": testBytes(size, seed: 11), "b.txt": Array("b".utf8)], to: "p", format: format)
        let server = try FaultyHTTPServer(root: dir.appending("www"))
        var options = Self.options
        options.probeSize = 4096
        options.streamThreshold = 1 << 20
        let reader = try RemotePackReader(url: server.url("p"), credential: .password("pw"), options: options)
        let library = AssetLibrary(reader: reader, url: server.url("p"))
        try server.setFault(.drip(bytesPerSecond: 1024))
        let task = Task { try await library.loadBytes("a.bin") }
        try await Task.sleep(for: .seconds(1))
        let cancelledAt = Date()
        task.cancel()
        await #expect(throws: CancellationError.self) { _ = try await task.value }
        #expect(Date().timeIntervalSince(cancelledAt) < Self.stopsWithin)
        // The reader is still usable once the server is well again.
        try server.setFault(.none)
        #expect(try library.read("b.txt") == Array("b".utf8))
    }
}
#endif
