import AssetPack
import AssetPackTestSupport
import Foundation

// The packs the library, remote and install suites read, attack and install, made one way: a
// tree written to a folder of its own, packed through `AssetPacks.pack` (the seam every packer
// uses) with the tests' cheap key derivation (`PackOptions.forTests`).

extension TemporaryDirectory {
    /// Packs `files` as `format` into `name` (a path in this directory; its folder is made) and
    /// returns the pack's URL. The files are written to `src-<name>` first, replacing what an
    /// earlier call left there, so a re-pack of a smaller tree removes what it lacks.
    /// - Parameters:
    ///   - password: The pack's password; `nil`: an unencrypted zip.
    ///   - key: Signs the pack when given.
    ///   - configure: Any other option (a release, deletions, a codec, limits).
    @discardableResult
    public func pack(
        _ files: [String: [UInt8]], _ format: PackFormat, as name: String, password: String? = "pw",
        signedBy key: PublisherSigningKey? = nil, _ configure: (inout PackOptions) -> Void = { _ in }
    ) throws -> URL {
        let folder = "src-" + name.replacingOccurrences(of: "/", with: "-")
        try? FileManager.default.removeItem(at: appending(folder))
        try FileManager.default.createDirectory(at: appending(folder), withIntermediateDirectories: true)
        let source = try write(files, under: folder)
        var options = PackOptions.forTests
        options.format = format
        options.credential = password.map { .password($0) }
        if password == nil { options.zip.encryption = .none }
        options.signingKey = key
        configure(&options)
        let output = appending(name)
        try FileManager.default.createDirectory(
            at: output.deletingLastPathComponent(), withIntermediateDirectories: true)
        try AssetPacks.pack(source: source, to: output, options: options)
        return output
    }
}
