import AssetPackCore

/// Which configuration the tests were built in (Package.swift's `SystemLibraries` trait), and so
/// what the packer and reader can do: the portable one has no libzip (no ZipCrypto) and no libzstd.
public enum BuildConfiguration {
    #if SystemLibraries
    /// Whether this is the portable configuration (`make portable`).
    public static let isPortable = false
    /// The zip encryptions this build writes and reads.
    public static let zipEncryptions: [PackEncryption] = [.aes256, .zipCrypto, .none]
    /// The container codecs this build writes and reads.
    public static let codecs: [ContainerCodec] = [.zstd, .deflate]
    #else
    /// Whether this is the portable configuration (`make portable`).
    public static let isPortable = true
    /// The zip encryptions this build writes and reads: ZipCrypto needs libzip.
    public static let zipEncryptions: [PackEncryption] = [.aes256, .none]
    /// The container codecs this build writes and reads: zstd needs libzstd.
    public static let codecs: [ContainerCodec] = [.deflate]
    #endif
}
