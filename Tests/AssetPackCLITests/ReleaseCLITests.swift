#if SystemLibraries  // the default configuration only: see Package.swift
import AssetPack
import AssetPackTestSupport
import Foundation
import Testing

/// Versioned, expiring signatures through the built binary (docs/SECURITY.md, "Rollback and
/// freeze"): `pack --pack-version/--expires/--name`, the installer's refusal of an older version
/// (from a file and from a URL, before the bulk download), `install --allow-rollback`, expired
/// packs refused by `install` and `cat --trust`, and where the signed release is shown.
@Suite(.serialized, .slow) struct ReleaseCLITests {
    let dir = TemporaryDirectory("release-cli")
    let tree: [String: [UInt8]] = [
        "a.txt": Array("hello, versioned world".utf8), "big.bin": testBytes(400_000, seed: 3),
    ]

    func run(_ arguments: [String]) throws -> CLI.Run { try CLI.run(arguments, password: "pw") }

    /// A publisher key pair `k` and a source tree.
    func setUp() throws {
        _ = try dir.write(tree, under: "src")
        let keygen = try run(["keygen", "--out", dir.appending("k").path])
        #expect(keygen.status == 0, "\(keygen.stderr)")
    }

    var trust: [String] { ["--trust", dir.appending("k.pub").path] }

    /// `assets.<format>` signed by `key` (`k`, or another `keygen` made) with release `version`,
    /// in folder `v<version>` (the default name is the output's name without extension, so every
    /// version is named "assets").
    func pack(_ format: String, version: Int, key: String = "k", extra: [String] = []) throws -> String {
        let folder = dir.appending("v\(version)-\(format)" + (key == "k" ? "" : "-\(key)"))
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let out = folder.appendingPathComponent("assets.\(format)").path
        let pack = try run(
            [
                "pack", dir.appending("src").path, "-o", out, "--format", format, "--sign-key",
                dir.appending("\(key).key").path, "--pack-version", String(version),
            ] + extra)
        #expect(pack.status == 0, "\(pack.stderr)")
        return out
    }

    /// A re-pack over a signed release that forgets to raise --pack-version (or leaves it at 0)
    /// would ship an update every installer refuses: pack refuses it, leaving the pack as it was,
    /// unless --allow-rollback; the same or a later version is signed.
    @Test(arguments: ["zip", "container"])
    func signingAnOlderVersionOverTheReleaseIsRefused(format: String) throws {
        try setUp()
        let out = dir.appending("assets.\(format)").path
        let key = ["--sign-key", dir.appending("k.key").path]
        func pack(_ extra: [String]) throws -> CLI.Run {
            try run(["pack", dir.appending("src").path, "-o", out, "--format", format] + key + extra)
        }
        #expect(try pack(["--pack-version", "5"]).status == 0)
        let release5 = try Data(contentsOf: URL(fileURLWithPath: out))
        for older in [["--pack-version", "4"], []] {
            let refused = try pack(older)
            #expect(refused.status == 1, "\(older): \(refused.stderr)")
            #expect(
                refused.stderr.contains(
                    "is version 5 of \"assets\", signed by this key; version \(older.last ?? "0") would be older"),
                "\(refused.stderr)")
            #expect(refused.stderr.contains("--allow-rollback"), "\(refused.stderr)")
            // The version to sign is a higher one: 5 again with other bytes is refused by installers too.
            #expect(refused.stderr.contains("Sign version 6 or later"), "\(refused.stderr)")
            #expect(try Data(contentsOf: URL(fileURLWithPath: out)) == release5)
        }
        #expect(try pack(["--pack-version", "5"]).status == 0)
        // Another name is another release line: nothing to compare with, but installers that
        // have "assets" under this file name refuse it, and pack says so.
        let renamed = try pack(["--pack-version", "1", "--pack-name", "other"])
        #expect(renamed.status == 0, "\(renamed.stderr)")
        #expect(
            renamed.stderr.contains(
                "was assets version 5; this pack is other: installers that installed assets under this file name refuse"
            ),
            "\(renamed.stderr)")
        // Another key: apps must trust it, and nothing is reused.
        #expect(try run(["keygen", "--out", dir.appending("k2").path]).status == 0)
        let rekeyed = try run(
            [
                "pack", dir.appending("src").path, "-o", out, "--format", format, "--sign-key",
                dir.appending("k2.key").path, "--pack-version", "7", "--pack-name", "other",
            ])
        #expect(rekeyed.status == 0, "\(rekeyed.stderr)")
        #expect(
            rekeyed.stderr.contains(
                "installers must trust that key (--trust) to take it, and nothing of the previous pack was reused"),
            "\(rekeyed.stderr)")
        #expect(rekeyed.stderr.contains(": 0 reused, 2 packed"), "\(rekeyed.stderr)")
        #expect(try pack(["--pack-version", "5", "--allow-rollback", "--fresh"]).status == 0)
        #expect(try pack(["--pack-version", "6"]).status == 0)
        let allowed = try pack(["--pack-version", "2", "--allow-rollback"])
        #expect(allowed.status == 0, "\(allowed.stderr)")
        #expect(allowed.stderr.contains("as assets version 2,"), "\(allowed.stderr)")
    }

    /// Signing other bytes as the same version: installers that have that version refuse them
    /// ("a new release must have a higher version"), so pack warns, exactly when they would: each
    /// re-pack is installed over the first, and the warning and the refusal must agree. (An
    /// unchanged re-pack leaves the file as it was, in both formats: no warning, and it installs.)
    @Test(arguments: ["zip", "container"])
    func signingOtherBytesAsTheSameVersionWarnsWhenInstallersWouldRefuse(format: String) throws {
        try setUp()
        let out = dir.appending("assets.\(format)").path
        let into = dir.appending("home-\(format)").path
        let key = ["--sign-key", dir.appending("k.key").path]
        func pack(_ version: String) throws -> CLI.Run {
            try run(
                ["pack", dir.appending("src").path, "-o", out, "--format", format, "--pack-version", version] + key)
        }
        #expect(try pack("5").status == 0)
        #expect(try run(["install", out, "--into", into] + trust).status == 0)
        var warnings = 0
        for edit in [false, true] {
            if edit { try Data("changed".utf8).write(to: dir.appending("src/a.txt")) }
            let again = try pack("5")
            #expect(again.status == 0, "\(again.stderr)")
            let warned = again.stderr.contains("is again assets version 5, but not the version 5 it replaced")
            let install = try run(["install", out, "--into", into] + trust)
            #expect(warned == (install.status == 5), "edit \(edit): \(again.stderr) / \(install.stderr)")
            if warned { warnings += 1 }
        }
        #expect(warnings == 1)
        let raised = try pack("6")
        #expect(raised.status == 0 && !raised.stderr.contains("warning"), "\(raised.stderr)")
    }

    /// Re-packing a signed pack without --sign-key writes an unsigned pack (a choice pack
    /// allows) and warns that installers trusting the key will refuse it.
    @Test(arguments: ["zip", "container"])
    func repackingASignedPackWithoutTheKeyWarns(format: String) throws {
        try setUp()
        let signed = try pack(format, version: 3)
        let unsigned = try run(["pack", dir.appending("src").path, "-o", signed, "--format", format])
        #expect(unsigned.status == 0, "\(unsigned.stderr)")
        #expect(
            unsigned.stderr.contains(
                "warning: \(signed) was signed by key "),
            "\(unsigned.stderr)")
        #expect(unsigned.stderr.contains("as assets version 3, never expires; this pack is not signed"))
        #expect(try run(["verify", signed, "--quiet"] + trust).status == 5)
        let again = try run(["pack", dir.appending("src").path, "-o", signed, "--format", format])
        #expect(again.status == 0 && !again.stderr.contains("warning"), "\(again.stderr)")
    }

    /// A damaged signed pack is refused by install even without --trust (checked against its own
    /// key, exit 4), not installed to fail at every read; the intact one installs.
    @Test(arguments: ["zip", "container"])
    func aDamagedSignedPackIsNotInstalledEvenWithoutTrust(format: String) throws {
        try setUp()
        let signed = try pack(format, version: 3)
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: signed)))
        bytes[bytes.count / 3] ^= 1
        let damaged = dir.appending("damaged.\(format)").path
        try Data(bytes).write(to: URL(fileURLWithPath: damaged))
        let into = dir.appending("home-\(format)").path
        let refused = try run(["install", damaged, "--into", into])
        #expect(refused.status == 4, "\(refused.status): \(refused.stderr)")
        #expect(refused.stderr.contains("is not what its signature describes"), "\(refused.stderr)")
        #expect(!FileManager.default.fileExists(atPath: into + "/damaged.\(format)"))
        let intact = try run(["install", signed, "--into", into])
        #expect(intact.status == 0, "\(intact.stderr)")
    }

    /// Damage in bytes only the signature covers (near the end: a zip's directory and signature
    /// entry, a container's signature block) passes every entry read; `verify` without --trust
    /// still refuses it (exit 4), as `install` does, instead of passing what install rejects.
    @Test(arguments: ["zip", "container"])
    func verifyWithoutTrustChecksASignedPackAgainstItsOwnKey(format: String) throws {
        try setUp()
        let signed = try pack(format, version: 3)
        #expect(try run(["verify", signed, "--quiet"]).status == 0)
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: signed)))
        bytes[bytes.count - 100] ^= 1
        let damaged = dir.appending("tail-damaged.\(format)").path
        try Data(bytes).write(to: URL(fileURLWithPath: damaged))
        let verify = try run(["verify", damaged, "--quiet"])
        #expect(verify.status == 4, "\(verify.status): \(verify.stderr)")
        let install = try run(["install", damaged, "--into", dir.appending("home-tail-\(format)").path])
        #expect(install.status == 4, "\(install.status): \(install.stderr)")
    }

    /// A pack of another signed name, by the same trusted publisher, renamed to the installed
    /// pack's file name, must not replace it: its version record is another name's, so an old
    /// "other" version 1 would otherwise stand in for "assets" version 5 (mix and match).
    @Test(arguments: ["zip", "container"])
    func aPackOfAnotherNameCannotReplaceTheInstalledOne(format: String) throws {
        try setUp()
        let v5 = try pack(format, version: 5)
        let into = dir.appending("home-\(format)").path
        #expect(try run(["install", v5, "--into", into] + trust).status == 0)
        let installed = try Data(contentsOf: URL(fileURLWithPath: into + "/assets.\(format)"))
        let other = try pack(format, version: 1, extra: ["--pack-name", "other"])
        let renamed = dir.appending("renamed/assets.\(format)")
        try FileManager.default.createDirectory(
            at: renamed.deletingLastPathComponent(), withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: other, toPath: renamed.path)
        for extra in [[], ["--allow-rollback"]] {
            let refused = try run(["install", renamed.path, "--into", into] + trust + extra)
            #expect(refused.status == 5, "\(extra): \(refused.status) \(refused.stderr)")
            #expect(
                refused.stderr.contains("holds the release assets; this pack is other, which cannot replace it"),
                "\(refused.stderr)")
            #expect(try Data(contentsOf: URL(fileURLWithPath: into + "/assets.\(format)")) == installed)
        }
        // The file's name is recorded: removing the installed pack does not let the other in.
        try FileManager.default.removeItem(atPath: into + "/assets.\(format)")
        try FileManager.default.removeItem(atPath: into + "/.assets.\(format).install")
        let afterRemoval = try run(["install", renamed.path, "--into", into] + trust)
        #expect(afterRemoval.status == 5, "\(afterRemoval.status) \(afterRemoval.stderr)")
        #expect(afterRemoval.stderr.contains("holds the release assets; this pack is other"), "\(afterRemoval.stderr)")
        #expect(!FileManager.default.fileExists(atPath: into + "/assets.\(format)"))
        // Under its own file name it installs.
        #expect(try run(["install", other, "--into", into, "--name", "other.\(format)"] + trust).status == 0)
    }

    @Test(arguments: ["zip", "container"])
    func anOlderVersionIsRefusedAsRollback(format: String) throws {
        try setUp()
        let v5 = try pack(format, version: 5)
        let v3 = try pack(format, version: 3)
        let into = dir.appending("home-\(format)").path
        let first = try run(["install", v5, "--into", into] + trust)
        #expect(first.status == 0, "\(first.stderr)")
        let older = try run(["install", v3, "--into", into] + trust)
        #expect(older.status == 5, "\(older.status) \(older.stderr)")
        #expect(
            older.stderr.contains(
                "rollback: assets version 3 is older than the installed version 5 (--allow-rollback installs it all the same)"
            ),
            "\(older.stderr)")
        let installed = try Data(contentsOf: URL(fileURLWithPath: into + "/assets.\(format)"))
        #expect(installed == (try Data(contentsOf: URL(fileURLWithPath: v5))), "the newer pack stays")

        // The record outlives the pack: removing it (and its install record) does not reopen the door.
        try FileManager.default.removeItem(atPath: into + "/assets.\(format)")
        try FileManager.default.removeItem(atPath: into + "/.assets.\(format).install")
        let afterRemoval = try run(["install", v3, "--into", into] + trust)
        #expect(afterRemoval.status == 5 && afterRemoval.stderr.contains("rollback"), "\(afterRemoval.stderr)")

        let allowed = try run(["install", v3, "--into", into, "--allow-rollback"] + trust)
        #expect(allowed.status == 0, "\(allowed.stderr)")
        #expect(
            try Data(contentsOf: URL(fileURLWithPath: into + "/assets.\(format)"))
                == (try Data(contentsOf: URL(fileURLWithPath: v3))))
        // A newer version is installed as usual.
        let v6 = try pack(format, version: 6)
        #expect(try run(["install", v6, "--into", into] + trust).status == 0)
    }

    @Test(arguments: ["zip", "container"])
    func anOlderVersionFromAURLIsRefusedBeforeTheDownload(format: String) throws {
        try setUp()
        let v5 = try pack(format, version: 5)
        let v3 = try pack(format, version: 3)
        let www = dir.appending("www")
        try FileManager.default.createDirectory(at: www, withIntermediateDirectories: true)
        let served = www.appendingPathComponent("assets.\(format)").path
        try FileManager.default.copyItem(atPath: v5, toPath: served)
        let nginx = try NginxServer(root: www)
        defer { nginx.stop() }
        let url = nginx.url("assets.\(format)").absoluteString
        let into = dir.appending("home-\(format)").path
        let first = try run(["install", url, "--into", into] + trust)
        #expect(first.status == 0, "\(first.stderr)")

        try FileManager.default.removeItem(atPath: served)
        try FileManager.default.copyItem(atPath: v3, toPath: served)
        // Both packs have one size and were written in one second: another mtime, so another ETag.
        try FileManager.default.setAttributes(
            [.modificationDate: Date(timeIntervalSinceNow: -3600)], ofItemAtPath: served)
        try nginx.resetAccessLog()
        let older = try run(["install", url, "--into", into, "--quiet"] + trust)
        #expect(older.status == 5, "\(older.status) \(older.stderr)")
        #expect(
            older.stderr.contains("rollback: assets version 3 is older than the installed version 5"),
            "\(older.stderr)")
        // Checked on the signature block, before the bulk of the pack was downloaded.
        let sent = try nginx.accessLog().reduce(0) { $0 + $1.bodyBytes }
        let size = Int(try FileSystem.stat(v3).size)
        #expect(sent < size / 2, "downloaded \(sent) of \(size) bytes before refusing")
        print(
            "figure: installing \(format) v3 from a URL over the installed v5: exit \(older.status), \(sent) of \(size) bytes downloaded: \(older.stderr.trimmingCharacters(in: .whitespacesAndNewlines))"
        )
        #expect(
            try Data(contentsOf: URL(fileURLWithPath: into + "/assets.\(format)"))
                == (try Data(contentsOf: URL(fileURLWithPath: v5))), "the newer pack stays")

        let allowed = try run(["install", url, "--into", into, "--allow-rollback"] + trust)
        #expect(allowed.status == 0, "\(allowed.stderr)")
        #expect(
            try Data(contentsOf: URL(fileURLWithPath: into + "/assets.\(format)"))
                == (try Data(contentsOf: URL(fileURLWithPath: v3))))
    }

    /// A pack the CLI cannot make (it refuses a past expiry, and writes block version 2 only),
    /// written through the library with the key `keygen` made.
    func libraryPack(_ format: String, expires: Date? = nil, legacy: Bool = false, version: UInt64 = 1) throws
        -> String
    {
        var options = PackOptions.forTests
        options.format = format == "zip" ? .zip : .container
        options.credential = .password("pw")
        options.signingKey = try PublisherSigningKey.load(from: dir.appending("k.key"))
        options.releaseVersion = version
        options.releaseExpires = expires
        options.legacySignature = legacy
        let folder = dir.appending("lib-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let out = folder.appendingPathComponent("assets.\(format)")
        try AssetPacks.pack(source: dir.appending("src"), to: out, options: options)
        return out.path
    }

    @Test(arguments: ["zip", "container"])
    func anExpiredPackIsRefusedByInstallAndByTrustingReaders(format: String) throws {
        try setUp()
        let expired = try libraryPack(format, expires: Date(timeIntervalSince1970: 1_600_000_000))
        let into = dir.appending("home-\(format)").path
        for args in [
            ["install", expired, "--into", into], ["install", expired, "--into", into, "--allow-rollback"],
            ["cat", expired, "a.txt"], ["verify", expired], ["list", expired],
        ] {
            let result = try run(args + trust)
            #expect(result.status == 5, "\(args[0]): \(result.status) \(result.stderr)")
            #expect(
                result.stderr.contains("expired at 2020-09-13T12:26:40Z"), "\(args[0]) names the date: \(result.stderr)"
            )
            #expect(result.stdout.isEmpty, "\(args[0]) printed data")
        }
        #expect(!FileManager.default.fileExists(atPath: into + "/assets.\(format)"), "nothing installed")
        // Without --trust the signature is not looked at.
        let cat = try run(["cat", expired, "a.txt"])
        #expect(cat.status == 0 && cat.stdout == tree["a.txt"], "\(cat.stderr)")
    }

    @Test(arguments: ["zip", "container"])
    func aVersionOneSignedPackInstallsUntilAVersionedReleaseWas(format: String) throws {
        try setUp()
        let legacy = try libraryPack(format, legacy: true)
        let verify = try run(["verify", legacy] + trust)
        #expect(verify.status == 0, "\(verify.stderr)")
        #expect(verify.stderr.contains("signed release: a version-1 signature"), "\(verify.stderr)")
        let into = dir.appending("home-\(format)").path
        let first = try run(["install", legacy, "--into", into] + trust)
        #expect(first.status == 0, "\(first.stderr)")
        let v2 = try pack(format, version: 2)
        #expect(try run(["install", v2, "--into", into] + trust).status == 0)
        let again = try run(["install", legacy, "--into", into] + trust)
        #expect(again.status == 5, "\(again.stderr)")
        #expect(
            again.stderr.contains(
                "rollback: a version-1 signature (no name, version 0) is older than the installed assets version 2"),
            "\(again.stderr)")
        // --allow-rollback lifts the version check, not the name: a pack that names nothing
        // cannot replace "assets"; under another file name it installs.
        let allowed = try run(["install", legacy, "--into", into, "--allow-rollback"] + trust)
        #expect(allowed.status == 5, "\(allowed.status) \(allowed.stderr)")
        #expect(
            allowed.stderr.contains("holds the release assets; this pack is unnamed (a version-1 signature)"),
            "\(allowed.stderr)")
        let elsewhere = try run(
            ["install", legacy, "--into", into, "--allow-rollback", "--name", "legacy.\(format)"] + trust)
        #expect(elsewhere.status == 0, "\(elsewhere.stderr)")
    }

    /// While its publisher rotates keys, an app trusts the old and the new one: versions of one
    /// name compare across both, so a release signed by the old key cannot replace a newer one
    /// signed by the new key (the record was per key, and let it in).
    @Test(arguments: ["zip", "container"])
    func anOlderReleaseOfTheOldKeyIsRefusedDuringARotation(format: String) throws {
        try setUp()
        #expect(try run(["keygen", "--out", dir.appending("k2").path]).status == 0)
        let v5 = try pack(format, version: 5)
        let v6 = try pack(format, version: 6, key: "k2")
        let both = trust + ["--trust", dir.appending("k2.pub").path]
        let into = dir.appending("home-\(format)").path
        #expect(try run(["install", v5, "--into", into] + both).status == 0)
        let newer = try run(["install", v6, "--into", into] + both)
        #expect(newer.status == 0, "\(newer.stderr)")
        let older = try run(["install", v5, "--into", into] + both)
        #expect(older.status == 5, "\(older.status) \(older.stderr)")
        #expect(
            older.stderr.contains(
                "rollback: assets version 5 is older than the installed version 6 (signed by another trusted key)"),
            "\(older.stderr)")
        #expect(
            try Data(contentsOf: URL(fileURLWithPath: into + "/assets.\(format)"))
                == (try Data(contentsOf: URL(fileURLWithPath: v6))))
        // A record written before it kept each file's release: the signed pack installed there
        // still counts.
        let recordURL = URL(fileURLWithPath: into + "/.assetpack.releases")
        var record = try #require(JSONSerialization.jsonObject(with: Data(contentsOf: recordURL)) as? [String: Any])
        #expect(record.removeValue(forKey: "files") != nil)
        try JSONSerialization.data(withJSONObject: record).write(to: recordURL)
        let olderStill = try run(["install", v5, "--into", into] + both)
        #expect(olderStill.status == 5 && olderStill.stderr.contains("rollback"), "\(olderStill.stderr)")
        // An app that trusts only the old key never saw version 6: there version 5 is current.
        #expect(try run(["install", v5, "--into", dir.appending("old-app-\(format)").path] + trust).status == 0)
    }

    /// After a compromise the app drops the old key: what the old key signed (an attacker's
    /// version 1000) no longer holds the new key's releases back, as it did while the release
    /// installed under a file name counted whatever its key.
    @Test(arguments: ["zip", "container"])
    func aDroppedKeysReleaseDoesNotHoldTheNewKeysBack(format: String) throws {
        try setUp()
        #expect(try run(["keygen", "--out", dir.appending("k2").path]).status == 0)
        let stolen = try pack(format, version: 1000)
        let v7 = try pack(format, version: 7, key: "k2")
        let into = dir.appending("home-\(format)").path
        #expect(try run(["install", stolen, "--into", into] + trust).status == 0)
        let trustingBoth = try run(
            ["install", v7, "--into", into] + trust + ["--trust", dir.appending("k2.pub").path])
        #expect(trustingBoth.status == 5 && trustingBoth.stderr.contains("rollback"), "\(trustingBoth.stderr)")
        let newOnly = try run(["install", v7, "--into", into, "--trust", dir.appending("k2.pub").path])
        #expect(newOnly.status == 0, "\(newOnly.status) \(newOnly.stderr)")
        #expect(
            try Data(contentsOf: URL(fileURLWithPath: into + "/assets.\(format)"))
                == (try Data(contentsOf: URL(fileURLWithPath: v7))))
    }

    @Test func packFlagsAreValidated() throws {
        try setUp()
        let src = dir.appending("src").path
        let out = dir.appending("x.zip").path
        let key = ["--sign-key", dir.appending("k.key").path]
        let refused: [(String, [String])] = [
            ("version without a key", ["--pack-version", "2"]),
            ("expiry without a key", ["--expires", "2099-01-01"]),
            ("name without a key", ["--pack-name", "assets"]),
            ("rollback without a key", ["--allow-rollback"]),
            ("expiry in the past", key + ["--expires", "2001-02-03"]),
            ("expiry not a date", key + ["--expires", "next tuesday"]),
            ("negative version", key + ["--pack-version", "-1"]),
            ("empty name", key + ["--pack-name", ""]),
            ("name over 255 bytes", key + ["--pack-name", String(repeating: "é", count: 128)]),
            ("name with a control character", key + ["--pack-name", "a\u{1B}[31mb"]),
        ]
        for (label, extra) in refused {
            let result = try run(["pack", src, "-o", out] + extra)
            #expect(result.status == 64, "\(label): \(result.status) \(result.stderr)")
            #expect(!FileManager.default.fileExists(atPath: out), "\(label) wrote a pack")
        }
        for (label, expires) in [
            ("a date", "2099-12-31"), ("a date-time", "2099-12-31T23:59:59Z"), ("relative days", "+30d"),
            ("relative hours", "+12h"),
        ] {
            let result = try run(["pack", src, "-o", out, "--pack-version", "1", "--expires", expires] + key)
            #expect(result.status == 0, "\(label): \(result.stderr)")
        }
    }

    @Test func theSignedReleaseIsShown() throws {
        try setUp()
        let signed = try pack("container", version: 7, extra: ["--pack-name", "level-pack", "--expires", "2099-12-31"])
        let verify = try run(["verify", signed] + trust)
        #expect(verify.status == 0, "\(verify.stderr)")
        #expect(
            verify.stderr.contains("signed release: level-pack version 7, expires 2099-12-31T00:00:00Z"),
            "\(verify.stderr)")
        let list = try run(["list", signed, "--json"] + trust)
        #expect(list.status == 0, "\(list.stderr)")
        let document = try JSONSerialization.jsonObject(with: Data(list.stdout)) as? [String: Any]
        let release = document?["release"] as? [String: Any]
        #expect(release?["name"] as? String == "level-pack", "\(list.text)")
        #expect(release?["version"] as? Int == 7)
        #expect(release?["expires"] as? String == "2099-12-31T00:00:00Z")
        #expect(release?["size"] as? Int == Int(try FileSystem.stat(signed).size))
        // Without --trust nothing was checked, so nothing is claimed.
        let untrusted = try run(["list", signed, "--json"])
        let plain = try JSONSerialization.jsonObject(with: Data(untrusted.stdout)) as? [String: Any]
        #expect(plain?["release"] == nil, "\(untrusted.text)")
    }
}
#endif
