#if SystemLibraries  // the default configuration only: see Package.swift
import AssetPack
import AssetPackHTTP
import AssetPackRemote
import AssetPackTestSupport
import Foundation
import Testing

/// RemoteTests, continued: installing from a URL.
extension RemoteTests {
    // MARK: - Installing

    @Test func anInterruptedInstallResumes() throws {
        let remote = try pack(tree(), .container, to: "p.pack")
        let server = try FaultyHTTPServer(root: dir.appending("www"))
        var options = Self.options
        options.maxRequest = 64 << 10
        options.saveInterval = 128 << 10
        options.retry.attempts = 2
        let home = dir.appending("home")
        let installer = PrivateInstaller(directory: home)
        let size = try FileSystem.stat(remote.path).size
        let cut = Counter()
        do {
            try installer.installRemote(server.url("p.pack"), credential: .password("pw"), options: options) {
                done, _ in
                if done > size / 2 && cut.value == 0 {
                    cut.increment()
                    try? server.setFault(.dropConnectionBeforeHeaders(times: 1_000_000))
                }
            }
            Issue.record("the install went through a dead server")
        } catch let error as AssetPackError {
            #expect(error.code == .remote, "\(error)")
        }
        #expect(!FileManager.default.fileExists(atPath: home.appendingPathComponent("p.pack").path))
        #expect(FileManager.default.fileExists(atPath: home.appendingPathComponent(".p.pack.download").path))
        try server.setFault(.none)
        let resumed = try installer.installRemote(server.url("p.pack"), credential: .password("pw"), options: options)
        #expect(resumed.installation.copied)
        #expect(resumed.resumed >= size / 4, "resumed \(resumed.resumed) of \(size)")
        #expect(resumed.downloaded < size, "downloaded \(resumed.downloaded) of \(size)")
        let installed = home.appendingPathComponent("p.pack")
        #expect(try Data(contentsOf: installed) == Data(contentsOf: remote))
        #expect(try FileSystem.stat(installed.path).permissions == 0o600)
        #expect(try FileSystem.stat(home.path).permissions == 0o700)
        #expect(!FileManager.default.fileExists(atPath: home.appendingPathComponent(".p.pack.download").path))
        let again = try installer.installRemote(server.url("p.pack"), credential: .password("pw"), options: options)
        #expect(!again.installation.copied && again.requests == 1)
    }

    @Test(arguments: [PackFormat.zip, .container])
    func updatesDownloadOnlyWhatChanged(format: PackFormat) throws {
        try FileManager.default.createDirectory(at: dir.appending("www"), withIntermediateDirectories: true)
        let nginx = try NginxServer(root: dir.appending("www"))
        let installer = PrivateInstaller(directory: dir.appending("home"), trustedKeys: [publisher.publicKey])
        let installed = dir.appending("home/assets.pack")
        let version = Counter()
        func update(_ files: [String: [UInt8]]) throws -> PrivateInstaller.RemoteInstallation {
            let out = try pack(files, format, to: "assets.pack", signed: true)
            // nginx's ETag is the mtime in seconds and the size: give each version its own.
            version.increment()
            try FileManager.default.setAttributes(
                [.modificationDate: Date().addingTimeInterval(Double(version.value) * 10)], ofItemAtPath: out.path)
            let result = try installer.installRemote(
                nginx.url("assets.pack"), credential: .password("pw"), options: Self.options)
            #expect(try Data(contentsOf: installed) == Data(contentsOf: dir.appending("www/assets.pack")))
            #expect(result.installation.publisher == publisher.publicKey)
            return result
        }
        let v1 = try update(tree())
        #expect(v1.reused == 0)
        let size = try FileSystem.stat(installed.path).size
        // One 4 KiB file changed (the re-pack reuses the old pack's unchanged entries).
        let v2 = try update(tree(changed: ["small/s5.bin": testBytes(4096, seed: 999)]))
        #expect(v2.reused > size * 9 / 10, "reused \(v2.reused) of \(size)")
        // The changed entry, the directory or index, and (zip) the 64 KiB end-record window.
        #expect(v2.downloaded < 100_000, "downloaded \(v2.downloaded) of \(size)")
        // Files added and removed.
        let v3 = try update(
            tree(
                changed: ["small/s5.bin": testBytes(4096, seed: 999), "new/n.bin": testBytes(5000, seed: 5)],
                removed: ["small/s9.bin", "text/readme.txt"]))
        #expect(v3.reused > size * 8 / 10 && v3.downloaded < 120_000, "\(v3)")
        // An unrelated pack (packed afresh, not over the last one: a container re-packed over it
        // would be an appended generation): only spans identical by SHA-256 (the empty entry's)
        // are reused.
        try FileManager.default.removeItem(at: dir.appending("www/assets.pack"))
        let v4 = try update(tree(seed: 77))
        #expect(v4.reused < 1000 && v4.downloaded >= size * 9 / 10, "\(v4)")
    }

    @Test(arguments: [PackFormat.zip, .container])
    func unsignedUpdates(format: PackFormat) throws {
        try FileManager.default.createDirectory(at: dir.appending("www"), withIntermediateDirectories: true)
        let nginx = try NginxServer(root: dir.appending("www"))
        let installer = PrivateInstaller(directory: dir.appending("home"))
        let installed = dir.appending("home/assets.pack")
        let version = Counter()
        func update(_ files: [String: [UInt8]]) throws -> PrivateInstaller.RemoteInstallation {
            let out = try pack(files, format, to: "assets.pack")
            version.increment()
            try FileManager.default.setAttributes(
                [.modificationDate: Date().addingTimeInterval(Double(version.value) * 10)], ofItemAtPath: out.path)
            let result = try installer.installRemote(
                nginx.url("assets.pack"), credential: .password("pw"), options: Self.options)
            #expect(try Data(contentsOf: installed) == Data(contentsOf: out))
            return result
        }
        _ = try update(tree())
        let size = try FileSystem.stat(installed.path).size
        let v2 = try update(tree(changed: ["small/s5.bin": testBytes(4096, seed: 999)]))
        switch format {
        case .container:
            // Entries with the same key id, digest and layout are the re-pack's byte-for-byte copies.
            #expect(v2.reused > size * 9 / 10 && v2.downloaded < 100_000, "\(v2)")
        default:
            // Nothing names an unsigned zip entry's stored bytes without reading them: a full download.
            #expect(v2.reused == 0 && v2.downloaded >= size * 9 / 10, "\(v2)")
        }
    }

    @Test func aLibraryInstallsFromAURLAndReads() async throws {
        let files = tree()
        _ = try pack(files, .container, to: "assets.pack", signed: true)
        let nginx = try NginxServer(root: dir.appending("www"))
        let installer = PrivateInstaller(directory: dir.appending("home"), trustedKeys: [publisher.publicKey])
        let library = try await AssetLibrary.openInstalling(
            from: nginx.url("assets.pack"), installer: installer, credential: .password("pw"))
        #expect(library.installation?.publisher == publisher.publicKey)
        #expect(library.installation?.path == dir.appending("home/assets.pack"))
        for (path, bytes) in files { #expect(try library.read(path) == bytes, "\(path)") }
    }

    @Test func aPublishedSHA256MustMatch() throws {
        let remote = try pack(tree(), .zip, to: "p.pack")
        let nginx = try NginxServer(root: dir.appending("www"))
        let installer = PrivateInstaller(directory: dir.appending("home"))
        try Data("0000000000000000000000000000000000000000000000000000000000000000  p.pack\n".utf8)
            .write(to: dir.appending("www/p.pack.sha256"))
        expectCode(.integrityFailure, { try installer.installRemote(nginx.url("p.pack"), options: Self.options) })
        #expect(!FileManager.default.fileExists(atPath: dir.appending("home/p.pack").path))
        // A download that failed its check is not kept to be resumed.
        #expect(!FileManager.default.fileExists(atPath: dir.appending("home/.p.pack.download").path))
        let digest = try PrivateInstaller.sha256(of: remote.path)
        try Data("\(digest)  p.pack\n".utf8).write(to: dir.appending("www/p.pack.sha256"))
        // The sidecar is looked up beside the path, whatever the query string.
        let versioned = try #require(URL(string: nginx.url("p.pack").absoluteString + "?v=3"))
        let result = try installer.installRemote(versioned, options: Self.options)
        #expect(result.installation.sha256 == digest)
        let log = try nginx.accessLog()
        #expect(log.contains { $0.uri.hasPrefix("/p.pack.sha256") && $0.status == 206 }, "\(log)")
    }

    @Test func aHostileIndexOffsetDoesNotDownloadThePack() throws {
        let remote = try pack(tree(), .container, to: "p.pack")
        var bytes = [UInt8](try Data(contentsOf: remote))
        for i in 0..<8 { bytes[56 + i] = UInt8((104 >> (8 * i)) & 0xFF) }  // indexOffset = 104
        try Data(bytes).write(to: remote)
        let nginx = try NginxServer(root: dir.appending("www"))
        var limits = ReadLimits()
        limits.maxIndexSize = 100_000
        do {
            _ = try RemotePackReader(
                url: nginx.url("p.pack"), credential: .password("pw"), limits: limits, options: Self.options)
            Issue.record("opened")
        } catch let error as AssetPackError {
            // The local reader's refusal of the same bytes (the index cannot end where the file
            // does), made on the first 64 KiB, before any index is fetched.
            #expect(error.code == .integrityFailure, "\(error)")
        }
        let fetched = try nginx.accessLog(waitingFor: 1).reduce(0) { $0 + $1.bodyBytes }
        #expect(fetched <= 65536, "fetched \(fetched) of \(bytes.count) bytes")
    }
}
#endif
