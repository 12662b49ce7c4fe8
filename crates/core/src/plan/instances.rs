//! A sweep point's instances side by side: each one's share of the CPUs
//! (by whole cores), of the endpoints and of the clients, and its request.

use super::*;

/// Instance `i`'s share of `list` split among `k` instances by whole
/// physical cores: a core and its hyper-thread siblings go to one
/// instance, so that two instances never share a core (the messenger
/// report's 2 x 14 on 28 balanced CPUs: each instance one socket's cores
/// and their siblings). With fewer cores in `list` than instances, by CPU.
pub fn split_cores(list: &CpuList, k: usize, i: usize, topo: &Topology) -> CpuList {
    let mut cores: Vec<((usize, usize), Vec<usize>)> = Vec::new();
    for &cpu in list.cpus() {
        let Some(c) = topo.cpus.iter().find(|c| c.id == cpu) else {
            return split(list, k, i);
        };
        match cores.iter_mut().find(|(key, _)| *key == (c.socket, c.core)) {
            Some((_, v)) => v.push(cpu),
            None => cores.push(((c.socket, c.core), vec![cpu])),
        }
    }
    if cores.len() < k || cores.len() == list.len() {
        return split(list, k, i);
    }
    let per = cores.len() / k;
    let mine: Vec<usize> = cores
        .iter()
        .skip(i * per)
        .take(per)
        .flat_map(|(_, v)| v.iter().copied())
        .collect();
    CpuList::from_cpus(mine).unwrap_or_else(|_| split(list, k, i))
}

/// Instance `i`'s share of `list` split among `k` instances.
pub fn split(list: &CpuList, k: usize, i: usize) -> CpuList {
    let cpus = list.cpus();
    let per = (cpus.len() / k).max(1);
    let part: Vec<usize> = cpus
        .iter()
        .copied()
        .skip((i * per).min(cpus.len() - 1))
        .take(per)
        .collect();
    CpuList::from_cpus(part).expect("a share of a non-empty cpuset")
}

/// The endpoints instance `i` of `k` reaches, of several: endpoints `i`,
/// `i + k`..., or endpoint `i` mod their number when there are fewer
/// endpoints than instances.
pub fn instance_endpoints(all: &[Endpoint], k: usize, i: usize) -> Vec<Endpoint> {
    if all.len() < k {
        return vec![all[i % all.len()].clone()];
    }
    all.iter().skip(i).step_by(k).cloned().collect()
}

/// Instance `i` of `instances`' request: its share of the clients, its
/// endpoints, and its cpusets (the placement's, split; the clients sharing
/// every CPU beside a server of the user's; else the usable CPUs' halves,
/// split).
pub(super) fn instance_request(
    base_req: &RunRequest,
    topo: &Topology,
    placed: Option<&Planned>,
    external: bool,
    clients: usize,
    instances: usize,
    i: usize,
) -> Result<RunRequest, PlanError> {
    let endpoints: Vec<Endpoint> = base_req
        .target
        .iter()
        .chain(&base_req.also_target)
        .cloned()
        .collect();
    let mut req = base_req.clone();
    req.clients = Some(clients / instances);
    req.sweep.instance = (instances > 1).then_some(i);
    if instances > 1 && endpoints.len() > 1 {
        let mine = instance_endpoints(&endpoints, instances, i);
        req.target = Some(mine[0].clone());
        req.also_target = mine[1..].to_vec();
    }
    if let Some(pl) = placed {
        if !external {
            req.server_cpus = Some(split_cores(&pl.server, instances, i, topo));
        }
        req.client_cpus = Some(split_cores(&pl.client, instances, i, topo));
        req.sweep.placement_policy = Some(pl.policy.clone());
        req.sweep.placement_note.extend(pl.notes.iter().cloned());
    } else if instances > 1 && external {
        // A server of the user's: the clients share every CPU.
        req.client_cpus = Some(split(&topo.usable(), instances, i));
    } else if instances > 1 {
        let usable = topo.usable();
        let mid = usable.len() / 2;
        let c = CpuList::from_cpus(usable.cpus()[..mid.max(1)].to_vec())
            .map_err(|e| PlanError(e.to_string()))?;
        let s = CpuList::from_cpus(usable.cpus()[mid.min(usable.len() - 1)..].to_vec())
            .map_err(|e| PlanError(e.to_string()))?;
        req.server_cpus = Some(split_cores(&s, instances, i, topo));
        req.client_cpus = Some(split_cores(&c, instances, i, topo));
    }
    Ok(req)
}

/// `flame --instances N --instance K`: the request of instance K and
/// those of the others (None: one instance, nothing to split).
pub fn instance_of(
    req: &crate::request::RunRequest,
    n: usize,
    k: Option<usize>,
    topo: &Topology,
) -> Result<Option<(crate::request::RunRequest, Vec<crate::request::RunRequest>)>, String> {
    match (n, k) {
        (0, _) => Err("--instances 0: at least 1".to_string()),
        (1, None) => Ok(None),
        (1, Some(_)) => Err("--instance K needs --instances N (N > 1)".to_string()),
        (n, None) => Err(format!(
            "--instances {n}: say which one to profile with --instance K (1..{n})"
        )),
        (n, Some(k)) if k == 0 || k > n => Err(format!("--instance {k}: 1 to {n}")),
        (n, Some(k)) => {
            let mut all = instance_requests(req, n, topo)?;
            let mine = all.remove(k - 1);
            Ok(Some((mine, all)))
        }
    }
}

/// What `flame` says of the instance it profiles among `n`.
pub fn instance_note(
    req: &crate::request::RunRequest,
    k: usize,
    n: usize,
    others: usize,
) -> String {
    let cpus = |c: &Option<crate::topo::CpuList>| c.as_ref().map_or("-".into(), |c| c.to_string());
    format!(
        "instance {k} of {n} profiled (server CPUs {}, client CPUs {}), {others} other(s) running beside it",
        cpus(&req.server_cpus),
        cpus(&req.client_cpus),
    )
}

/// The instances of `flame --instances N`: the requests of all N (each
/// its share of the cpusets and of the clients), as a sweep plans them.
pub fn instance_requests(
    req: &crate::request::RunRequest,
    n: usize,
    topo: &Topology,
) -> Result<Vec<crate::request::RunRequest>, String> {
    use crate::topo::CpuList;
    let clients = req.clients.unwrap_or(1);
    if !clients.is_multiple_of(n) {
        return Err(format!(
            "--instances {n} with --clients {clients}: the clients must divide evenly among the instances"
        ));
    }
    let usable = topo.usable();
    let mid = usable.len() / 2;
    let halves = || -> Result<(CpuList, CpuList), String> {
        let c =
            CpuList::from_cpus(usable.cpus()[..mid.max(1)].to_vec()).map_err(|e| e.to_string())?;
        let s = CpuList::from_cpus(usable.cpus()[mid.min(usable.len() - 1)..].to_vec())
            .map_err(|e| e.to_string())?;
        Ok((c, s))
    };
    let (client, server) = match (&req.client_cpus, &req.server_cpus) {
        (Some(c), Some(s)) => (c.clone(), s.clone()),
        (c, s) => {
            let (dc, ds) = halves()?;
            (c.clone().unwrap_or(dc), s.clone().unwrap_or(ds))
        }
    };
    Ok((0..n)
        .map(|i| {
            let mut q = req.clone();
            q.clients = Some(clients / n);
            q.sweep.instance = Some(i);
            q.client_cpus = Some(split_cores(&client, n, i, topo));
            q.server_cpus = Some(split_cores(&server, n, i, topo));
            q
        })
        .collect())
}
