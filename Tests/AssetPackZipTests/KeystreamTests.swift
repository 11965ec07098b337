import AssetPackCore
import AssetPackTestSupport
import AssetPackZip
import Testing

/// WinZip AES's keystream spread across cores (the portable build's swift-crypto backend) is the
/// sequential keystream byte for byte, whatever pieces it is asked for.
@Suite struct KeystreamTests {
    @Test(arguments: WinZipAESKeyStrength.allCases)
    func theParallelKeystreamIsTheSequentialOne(strength: WinZipAESKeyStrength) throws {
        let key = testBytes(strength.keyLength, seed: 38)
        let plain = testBytes((3 << 20) + 7, seed: 5)
        // Pieces that leave keystream pending, cross batch borders, and are large enough to split.
        let pieces = [5, 300_001, 11, 1 << 20, 16, (3 << 20) + 7 - (5 + 300_001 + 11 + (1 << 20) + 16)]
        var outputs: [[UInt8]] = []
        for threshold in [nil, 128 << 10, 64 << 10] as [Int?] {
            let keystream = try key.withUnsafeBytes { try WinZipAESKeystream(strength: strength, key: $0) }
            keystream.parallelThreshold = threshold
            var bytes = plain
            bytes.withUnsafeMutableBytes { buffer in
                var at = 0
                for n in pieces {
                    keystream.apply(UnsafeMutableRawBufferPointer(rebasing: buffer[at..<at + n]))
                    at += n
                }
            }
            outputs.append(bytes)
        }
        #expect(outputs[0] != plain)
        #expect(outputs[1] == outputs[0])
        #expect(outputs[2] == outputs[0])
    }
}
