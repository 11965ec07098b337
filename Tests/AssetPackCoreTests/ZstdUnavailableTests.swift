#if !SystemLibraries
import AssetPackCore
import Testing

/// The portable configuration has no libzstd: a zstd frame is refused by name, with how to pack
/// for this build, and the container's default codec is deflate.
@Suite struct ZstdUnavailableTests {
    @Test func aZstdFrameIsRefusedNamingTheCodecAndTheWayOut() throws {
        // A real zstd frame (RFC 8878 magic, single segment, content size 1, one raw block "A").
        let frame: [UInt8] = [0x28, 0xB5, 0x2F, 0xFD, 0x20, 0x01, 0x09, 0x00, 0x00, 0x41]
        var out = [UInt8](repeating: 0, count: 1)
        let error = #expect(throws: AssetPackError.self) {
            try frame.withUnsafeBytes { i in
                try out.withUnsafeMutableBytes { try Zstd.Decompressor().decompress(i, into: $0) }
            }
        }
        #expect(error?.code == .unsupportedFormat)
        #expect(error?.message.contains("zstd") == true)
        #expect(error?.message.contains("--codec deflate") == true)
        #expect(!Zstd.isAvailable)
        #expect(ContainerPackOptions().codec == .deflate)
    }
}
#endif
