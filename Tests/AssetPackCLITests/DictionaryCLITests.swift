#if SystemLibraries  // the default configuration only: see Package.swift
import AssetPack
import AssetPackTestSupport
import Foundation
import Testing

/// The container's per-pack zstd dictionary through the built binary: a signed pack of many small
/// text files trains one, every command reads the files back through it (trust checked, the
/// dictionary itself never shown), and a re-pack after an edit copies every unchanged chunk.
@Suite struct DictionaryCLITests {
    let dir = TemporaryDirectory("dictionary-cli")

    func run(_ arguments: [String]) throws -> CLI.Run { try CLI.run(arguments, password: "pw") }

    /// 48 configuration files of about 5 KB drawing on one vocabulary (as a game's do), and a media file.
    static var tree: [String: [UInt8]] {
        var files: [String: [UInt8]] = ["media/sound.ogg": testBytes(40_000, seed: 5)]
        for i in 0..<48 { files["cfg/unit\(i).cfg"] = configFile(i) }
        return files
    }

    @Test func aSignedPackOfSmallFilesReadsBackThroughItsDictionary() throws {
        let tree = Self.tree
        _ = try dir.write(tree, under: "src")
        #expect(try run(["keygen", "--out", dir.appending("publisher").path]).status == 0)
        let out = dir.appending("game.apack").path
        let pack = try run([
            "pack", dir.appending("src").path, "-o", out, "--format", "container",
            "--sign-key", dir.appending("publisher.key").path,
        ])
        #expect(pack.status == 0, "\(pack.stderr)")
        // 49 files packed: the dictionary is the pack's own, not counted as a file, but named.
        #expect(pack.stderr.contains("packed 49 entries"), "\(pack.stderr)")
        let size = try #require(pack.stderr.firstMatch(of: /, a (\d+)-byte zstd dictionary\)/), "\(pack.stderr)")
        #expect((1...65536).contains(Int(size.1) ?? 0))
        let trust = ["--trust", dir.appending("publisher.pub").path]

        let list = try run(["list", out, "--json"] + trust)
        #expect(list.status == 0, "\(list.stderr)")
        #expect(!list.text.contains(".assetpack"), "the dictionary is listed: \(list.text)")
        let json = try JSONSerialization.jsonObject(with: Data(list.stdout)) as? [String: Any]
        let entries = try #require(json?["entries"] as? [[String: Any]])
        #expect(entries.count == 49)
        let compressed = entries.filter { ($0["path"] as? String)?.hasPrefix("cfg/") == true }
        #expect(compressed.allSatisfy { $0["compression"] as? String == "zstd" }, "\(compressed.prefix(2))")

        let verify = try run(["verify", out] + trust)
        #expect(verify.status == 0, "\(verify.stderr)")
        #expect((verify.text + verify.stderr).contains("49 of 49 entries verified"), "\(verify.text) \(verify.stderr)")
        for path in ["cfg/unit0.cfg", "cfg/unit47.cfg", "media/sound.ogg"] {
            let cat = try run(["cat", out, path] + trust)
            #expect(cat.status == 0 && cat.stdout == tree[path], "\(path): \(cat.stderr)")
        }
        #expect(try run(["cat", out, ".assetpack/zstd-dictionary"]).status == 3)

        // One file changed: its chunk is the only one compressed again, with the same dictionary.
        try Data("key_0_name=1\n".utf8).write(to: dir.appending("src/cfg/unit7.cfg"))
        let again = try run([
            "pack", dir.appending("src").path, "-o", out, "--format", "container",
            "--sign-key", dir.appending("publisher.key").path,
        ])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(again.stderr.contains("48 reused, 1 packed"), "\(again.stderr)")
        #expect(again.stderr.contains(", a \(size.1)-byte zstd dictionary)"), "the dictionary changed: \(again.stderr)")
        let changed = try run(["cat", out, "cfg/unit7.cfg"] + trust)
        #expect(changed.text == "key_0_name=1\n", "\(changed.stderr)")
        #expect(try run(["verify", out] + trust).status == 0)
    }
}
#endif
