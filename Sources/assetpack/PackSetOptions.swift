import ArgumentParser
import AssetPack
import AssetPackRemote
import Foundation

/// `--over PACK` (repeatable): packs read over the command's PACK as one set, bottom first.
struct PackSetOptions: ParsableArguments {
    @Option(
        name: .customLong("over"),
        help: ArgumentHelp(
            """
            Also read this pack over the ones before it (repeat, bottom first): PACK and every --over pack are \
            read as one set, where the last pack that has a path serves it and a patch pack's deletions hide \
            paths of the packs below. The same credential and --trust apply to every pack.
            """, valueName: "PACK"))
    var over: [String] = []

    /// The packs in order, bottom first.
    func packs(_ base: String) -> [String] { [base] + over }
}

/// What a command reads: one pack, or a set of several.
struct OpenedPacks {
    /// The reader: the pack itself, or the set.
    var reader: any PackReader
    /// The set, when more than one pack was given.
    var set: PackSet?
    /// Every pack's byte source, bottom first.
    var sources: [any ByteSource]

    /// The format of the pack that serves `path` (the single pack's otherwise).
    func format(serving path: String) -> PackFormat {
        set?.member(serving: path)?.reader.format ?? reader.format
    }
}

extension CredentialOptions {
    /// Opens `base` alone (as before: no pack names in the output), or `base` and `set.over` as
    /// one ``PackSet`` whose packs are named as given on the command line.
    func open(
        _ base: String, set: PackSetOptions, forData: Bool, trust: TrustOptions, network: NetworkOptions
    ) throws -> OpenedPacks {
        if set.over.isEmpty {
            let (reader, source) = try openPack(base, forData: forData, trust: trust, network: network)
            return OpenedPacks(reader: reader, set: nil, sources: [source])
        }
        var members: [PackSet.Member] = []
        var sources: [any ByteSource] = []
        for pack in set.packs(base) {
            do {
                let (reader, source) = try openPack(pack, forData: forData, trust: trust, network: network)
                members.append(PackSet.Member(name: pack, reader: reader))
                sources.append(source)
            } catch let error as AssetPackError {
                throw error.naming(pack: pack)
            }
        }
        let packSet = try PackSet(members)
        return OpenedPacks(reader: packSet, set: packSet, sources: sources)
    }
}
