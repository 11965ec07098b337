import Foundation

/// A small tmpfs mounted on a fresh directory, for tests of full disks (ENOSPC). Needs root.
public final class SmallFileSystem: @unchecked Sendable {
    /// Whether this process may mount one (root, with `/bin/mount`).
    public static let isAvailable: Bool = getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/bin/mount")

    private let holder = TemporaryDirectory("assetpack-tmpfs")
    /// The mount point.
    public var url: URL { holder.url }

    /// Mounts a tmpfs of `megabytes` MiB.
    /// - Throws: When `mount` fails.
    public init(megabytes: Int) throws {
        try Self.run("/bin/mount", ["-t", "tmpfs", "-o", "size=\(megabytes)m", "tmpfs", holder.path])
    }

    deinit { try? Self.run("/bin/umount", [holder.path]) }

    private static func run(_ tool: String, _ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: "\(tool) \(arguments) failed"])
        }
    }
}
