package engine

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/dbrig/dbrig/internal/blockdev"
)

// emulatedDiskBytes is the size of an emulated disk: sparse, so it costs
// what the server writes, and large enough for seed 002's 16 GB table
// with its indexes.
const emulatedDiskBytes = 64 << 30

// DisksUnavailable says this machine cannot emulate an instance's disk
// (not root, no loop devices, no blkio throttle): the point is skipped
// with the reason rather than failed.
type DisksUnavailable struct{ Reason string }

func (e DisksUnavailable) Error() string { return e.Reason }

// Disks are an instance's emulated disks: a dbrig loop device for its data
// (DataDisk) and one for its WAL (WALDisk), each throttled by the blkio
// limits of the instance's cgroup.
type Disks struct {
	loops  []*blockdev.Loop
	limits []DiskLimit
}

// MakeDisks makes the loop devices cfg's disk profiles ask for, each in
// the directory cfg names for what it holds (else base, else
// os.TempDir()), owned by the server's account, and returns cfg with
// DataDir and WALDir moved onto them. A cfg without a disk profile comes
// back unchanged, with no Disks.
func MakeDisks(ctx context.Context, cfg InstanceConfig, base string, user ServerUser) (_ *Disks, _ InstanceConfig, err error) {
	if cfg.DataDisk == "" && cfg.WALDisk == "" {
		return nil, cfg, nil
	}
	if err := blockdev.Permitted(); err != nil {
		return nil, cfg, DisksUnavailable{Reason: "an emulated disk needs a loop device: " + err.Error()}
	}
	if _, err := CgroupSupport("blkio"); err != nil {
		return nil, cfg, DisksUnavailable{Reason: "an emulated disk needs the blkio throttle: " + err.Error()}
	}
	d := &Disks{}
	defer func() {
		if err != nil {
			err = errors.Join(err, d.Close(context.WithoutCancel(ctx)))
		}
	}()
	for _, disk := range []struct {
		profile string
		dir     *string
	}{{cfg.DataDisk, &cfg.DataDir}, {cfg.WALDisk, &cfg.WALDir}} {
		if disk.profile == "" {
			continue
		}
		dir := *disk.dir
		if dir == "" {
			dir = base
		}
		mount, err := d.add(ctx, disk.profile, dir, user)
		if err != nil {
			return nil, cfg, err
		}
		*disk.dir = mount
	}
	return d, cfg, nil
}

// add makes one throttled loop device under base and returns its mount.
func (d *Disks) add(ctx context.Context, profile, base string, user ServerUser) (string, error) {
	p, err := blockdev.LookupProfile(profile)
	if err != nil {
		return "", err
	}
	if base == "" {
		base = os.TempDir()
	}
	if err := blockdev.RemoveStale(ctx, base); err != nil {
		return "", fmt.Errorf("loop devices a killed dbrig left in %s: %w", base, err)
	}
	loop, err := blockdev.NewLoop(ctx, base, blockdev.LoopOptions{Size: emulatedDiskBytes, UID: int(user.UID), GID: int(user.GID), Sparse: true})
	if err != nil {
		return "", fmt.Errorf("emulated disk %s: %w", profile, err)
	}
	d.loops = append(d.loops, loop)
	dev, err := loop.Device.MajorMinor()
	if err != nil {
		return "", err
	}
	if !p.Unlimited() {
		d.limits = append(d.limits, DiskLimit{Device: dev, ReadBPS: p.ReadBPS, WriteBPS: p.WriteBPS, ReadIOPS: p.ReadIOPS, WriteIOPS: p.WriteIOPS})
	}
	return loop.Mount, nil
}

// Limits are the throttles of the instance's cgroup, one per throttled
// device (none for a nil Disks).
func (d *Disks) Limits() []DiskLimit {
	if d == nil {
		return nil
	}
	return d.limits
}

// Keep makes Close keep each device's backing file, the one place the
// data on it lives, and returns their directories, each with a
// blockdev.KeptFile saying how to mount it. Safe on a nil Disks.
func (d *Disks) Keep() []string {
	if d == nil {
		return nil
	}
	var dirs []string
	for _, l := range d.loops {
		l.Keep()
		dirs = append(dirs, l.Dir)
	}
	return dirs
}

// Close unmounts and detaches the loop devices and removes them (unless kept), once the server that used
// them has stopped. Safe on a nil Disks and more than once.
func (d *Disks) Close(ctx context.Context) error {
	if d == nil {
		return nil
	}
	var errs []error
	for _, l := range d.loops {
		errs = append(errs, l.Close(ctx))
	}
	d.loops = nil
	return errors.Join(errs...)
}

// InstanceLimits are what an instance's cgroup caps: the one place the
// limits of an instance's configuration are assembled.
func InstanceLimits(cfg InstanceConfig, disks *Disks) Limits {
	return Limits{Memory: cfg.Memory, CPU: cfg.CPUSpeed, Disks: disks.Limits()}
}
