import ProxyAccess

extension ProxyConfiguration {
    /// Every parent the configuration names: `--parent`, then the routes' own, each once.
    var namedParents: [ParentProxy] {
        var seen: Set<ParentProxy> = []
        let routed = routes.compactMap { route -> ParentProxy? in
            if case .parent(let parent)? = route.egress { return parent }
            return nil
        }
        return (parents.proxies + routed).filter { seen.insert($0).inserted }
    }
}
