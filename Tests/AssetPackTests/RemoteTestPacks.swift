import AssetPack
import AssetPackTestSupport
import Foundation

extension TemporaryDirectory {
    /// Packs `files` with the password `pw` (a cheap scrypt, for tests) into `www/<name>`, the
    /// folder the remote tests serve; signed with `signingKey` when one is given.
    @discardableResult
    func packForServing(
        _ files: [String: [UInt8]], _ format: PackFormat, to name: String, signingKey: PublisherSigningKey? = nil
    ) throws -> URL {
        let source = appending("src-\(name)")
        try? FileManager.default.removeItem(at: source)
        _ = try write(files, under: "src-\(name)")
        var options = PackOptions()
        options.format = format
        options.credential = .password("pw")
        options.container.kdf = .scrypt(logN: 10, r: 8, p: 1)
        options.signingKey = signingKey
        let out = appending("www/\(name)")
        try FileManager.default.createDirectory(at: appending("www"), withIntermediateDirectories: true)
        try AssetPacks.pack(source: source, to: out, options: options)
        return out
    }
}
