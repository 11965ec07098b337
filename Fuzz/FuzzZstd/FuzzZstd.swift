// libFuzzer target: the zstd decoder (Zstd.Decompressor) on arbitrary bytes, into the size the
// frame declares (bounded) and into sizes around it, without and with a trained dictionary (the
// container's codec 3), plus a round trip of the input through Zstd.Compressor, without and with
// the dictionary, that must give back the input. Built by `make fuzz`.
import AssetPackCore
import Foundation
import FuzzSupport

#if FUZZING
// libFuzzer calls the target from one thread: one decoder, compressor and buffer for all runs.
nonisolated(unsafe) let decompressor = Zstd.Decompressor()
nonisolated(unsafe) let compressor = Zstd.Compressor(level: Zstd.fastLevel)
/// A dictionary trained once on fixed samples that share their keys, as a game's files do.
let dictionary: [UInt8] = {
    let samples = (0..<64).map { i in
        Array((0..<80).map { k in "key_\((i * 31 + k * 7) % 97)_name=\((i * k) % 1000)\n" }.joined().utf8)
    }
    return Zstd.trainDictionary(samples, capacity: 8 << 10)!
}()
nonisolated(unsafe) let primedDecompressor = try! Zstd.Decompressor(dictionary: dictionary)
nonisolated(unsafe) let primedCompressor = Zstd.Compressor(level: Zstd.fastLevel, dictionary: dictionary)
let maxOutput = 4 << 20
nonisolated(unsafe) let output = UnsafeMutableRawBufferPointer.allocate(byteCount: maxOutput + 1, alignment: 64)

/// The content size a zstd frame header declares (RFC 8878 §3.1.1.1), if it has one.
func declaredSize(_ bytes: UnsafeRawBufferPointer) -> Int? {
    guard bytes.count >= 6 else { return nil }
    let fhd = bytes[4]
    let single = fhd & 0x20 != 0
    let fcsFlag = Int(fhd >> 6)
    let at = 5 + (single ? 0 : 1) + [0, 1, 2, 4][Int(fhd & 3)]
    let size = fcsFlag == 0 ? (single ? 1 : 0) : [0, 2, 4, 8][fcsFlag]
    guard size > 0, bytes.count >= at + size else { return nil }
    var value = 0
    for i in 0..<size { value |= Int(bytes[at + i]) << (8 * i) }
    return size == 2 ? value + 256 : value
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzZstd(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: data, count: size)
    var sizes = [0, 1, 4096]
    // A declared size past Int.max reads back negative here: only 0...maxOutput is tried.
    if let declared = declaredSize(bytes), (0...maxOutput).contains(declared) {
        sizes += [declared, max(0, declared - 1), declared + 1]
    }
    for n in sizes {
        let out = UnsafeMutableRawBufferPointer(rebasing: output[0..<n])
        for decoder in [decompressor, primedDecompressor] where (try? decoder.decompress(bytes, into: out)) != nil {
            // Success means the frame declared exactly this size (never wrong bytes as success
            // in length, at least: without a checksum, content is the caller's AES-GCM's job).
            precondition(declaredSize(bytes) == n, "decoded a frame into a size it does not declare")
        }
    }
    // Round trip: the input compressed and decoded must be the input, with each pair.
    if size <= maxOutput {
        for (encoder, decoder) in [(compressor, decompressor), (primedCompressor, primedDecompressor)] {
            let frame = UnsafeMutableRawBufferPointer.allocate(byteCount: encoder.bound(size), alignment: 16)
            defer { frame.deallocate() }
            let n = encoder.compress(bytes, into: frame)!
            let out = UnsafeMutableRawBufferPointer(rebasing: output[0..<size])
            try! decoder.decompress(UnsafeRawBufferPointer(rebasing: frame[0..<n]), into: out)
            precondition(size == 0 || memcmp(out.baseAddress!, data, size) == 0, "round trip changed the bytes")
        }
    }
    return 0
}

@_cdecl("FuzzZstd_main")
public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runFuzzer(argc, argv, fuzzZstd)
}
#else
@main enum FuzzZstd {
    static func main() { fuzzStub() }
}
#endif
