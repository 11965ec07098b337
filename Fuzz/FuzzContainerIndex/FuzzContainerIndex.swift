// libFuzzer target: the container's header and index parsers (versions 1–3, 4 and 6: the header
// slots and the chunk offsets) on arbitrary bytes, past the cryptography (as if the key were known
// and the index had authenticated). Built by `make fuzz`.
import AssetPackContainer
import AssetPackCore
import FuzzSupport

#if FUZZING
let limits: ReadLimits = {
    var l = ReadLimits()
    l.maxEntries = 100_000
    return l
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzContainerIndex(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: data, count: size)
    // The header (versions 6, 7: the choice between two slots), then the index after it.
    if let (_, header) = try? ContainerHeader.read(from: MemoryByteSource(Array(bytes))) {
        _ = try? header.checkKDF(limits)
        let start = Int(header.dataStart)
        let index = UnsafeRawBufferPointer(rebasing: bytes[min(start, size)...])
        if header.hasChunkTable {
            _ = try? ContainerIndex.decodeV4(
                index, chunkShift: header.chunkShift,
                data: header.dataStart..<max(header.dataStart, header.indexOffset),
                offsets: header.isAppendable, limits: limits)
        } else {
            _ = try? ContainerIndex.decode(
                index, version: header.version, chunkShift: header.chunkShift, dataEnd: header.indexOffset,
                limits: limits)
        }
    }
    let headerSize = UInt64(ContainerFormat.headerSize)
    // The index alone, against a few plausible geometries.
    for shift: UInt8 in [12, 16] {
        _ = try? ContainerIndex.decode(
            bytes, chunkShift: shift, dataEnd: headerSize + UInt64(size) * 4, limits: limits)
    }
    // Versions 4 and 6 (content-defined chunks; 6: each chunk's offset), with the writer's
    // default bounds and the tests' small ones.
    for shift: UInt8 in [14, 18] {
        for offsets in [false, true] {
            let start = offsets ? UInt64(ContainerFormat.appendableDataStart) : headerSize
            _ = try? ContainerIndex.decodeV4(
                bytes, chunkShift: shift, data: start..<start + UInt64(size) * 4, offsets: offsets, limits: limits)
        }
    }
    return 0
}

@_cdecl("FuzzContainerIndex_main")
public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runFuzzer(argc, argv, fuzzContainerIndex)
}
#else
@main enum FuzzContainerIndex {
    static func main() { fuzzStub() }
}
#endif
