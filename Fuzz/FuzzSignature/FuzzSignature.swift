// libFuzzer target: the signature block parser (both kinds, with and without trusted keys) and a
// signed zip's signature checks (end records, signature entry, directory digest) on arbitrary
// bytes. Built by `make fuzz`.
import AssetPackCore
import AssetPackFormat
import AssetPackZip
import FuzzSupport

#if FUZZING
let trusted: [PublisherKey] = [try! PublisherKey(rawRepresentation: Array(repeating: 7, count: 32))]

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSignature(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: data, count: size)
    for kind in [PackSignature.Kind.zip, .container] {
        _ = try? PackSignature.parse(bytes, kind: kind, trusted: [])
        _ = try? PackSignature.parse(bytes, kind: kind, trusted: trusted)
    }
    // The same bytes as a whole zip, opened as a trusted reader would.
    let file = Array(bytes)
    let read = { (offset: UInt64, count: Int) throws -> [UInt8] in
        guard offset <= UInt64(file.count), count <= file.count - Int(offset) else {
            throw AssetPackError(.integrityFailure, "short")
        }
        return Array(file[Int(offset)..<Int(offset) + count])
    }
    if let structure = try? ZipStructure(fileSize: UInt64(size), limits: .default, signed: true, read: read) {
        _ = try? ZipSignature.verify(structure, fileSize: UInt64(size), trusted: trusted, read: read)
    }
    return 0
}

@_cdecl("FuzzSignature_main")
public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runFuzzer(argc, argv, fuzzSignature)
}
#else
@main enum FuzzSignature {
    static func main() { fuzzStub() }
}
#endif
