// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * MetaRoCE: memory regions.
 *
 * A user MR pins its pages with ib_umem; the transport copies payload to
 * and from them with kmap_local_page(), so no DMA mapping is involved.
 *
 * Keys: lkey == rkey == index << 8 | tag, where index is a random free slot
 * of metaroce_mrs and tag a random byte, so that a key says nothing about
 * the keys of other MRs (a peer cannot walk them in sequence).  Every use
 * of a key goes through metaroce_mr_get(), which checks the PD, the access
 * flags and the range; it runs under RCU from the receive softirq.
 *
 * A DMA MR (get_dma_mr) serves kernel consumers: ib_alloc_pd() takes one
 * for the PD's local_dma_lkey.  The device uses virtual DMA (it registers
 * without a DMA device), so the "DMA addresses" of kernel SGEs are kernel
 * virtual addresses and a DMA MR spans all of them: it has no umem and no
 * pages, and metaroce_mr_copy() copies to and from the address itself.
 * Only QPs of the same PD can name it, and user PDs never hold one.
 */

#include <linux/highmem.h>
#include <linux/random.h>
#include <linux/vmalloc.h>

#include "metaroce.h"
#include "metaroce_param.h"

/* Key index 0 is never used: lkey 0 stays invalid. */
#define METAROCE_MR_INDEX_MAX	((1u << 24) - 1)
#define METAROCE_MR_KEY_TRIES	64

static DEFINE_XARRAY(metaroce_mrs);

static u32 metaroce_key_index(u32 key)
{
	return key >> 8;
}

/* Insert @mr at a random free index; sets its keys. */
static int metaroce_mr_assign_key(struct metaroce_mr *mr)
{
	int i, err;

	for (i = 0; i < METAROCE_MR_KEY_TRIES; i++) {
		u32 r = get_random_u32();
		u32 index = (r >> 8) % METAROCE_MR_INDEX_MAX + 1;

		err = xa_insert(&metaroce_mrs, index, mr, GFP_KERNEL);
		if (err == -EBUSY)
			continue;
		if (err)
			return err;
		mr->ib_mr.lkey = index << 8 | (r & 0xff);
		mr->ib_mr.rkey = mr->ib_mr.lkey;
		return 0;
	}
	return -ENOSPC;
}

/* A zeroed MR counted against METAROCE_MAX_MR, or ERR_PTR(-ENOMEM). */
static struct metaroce_mr *metaroce_mr_alloc(struct metaroce_dev *mdev)
{
	struct metaroce_mr *mr;

	if (atomic_inc_return(&mdev->num_mr) <= METAROCE_MAX_MR) {
		mr = kzalloc(sizeof(*mr), GFP_KERNEL);
		if (mr)
			return mr;
	}
	atomic_dec(&mdev->num_mr);
	return ERR_PTR(-ENOMEM);
}

/* Undo metaroce_mr_alloc() for an MR that was never published. */
static void metaroce_mr_free_unpublished(struct metaroce_dev *mdev,
					 struct metaroce_mr *mr)
{
	kfree(mr);
	atomic_dec(&mdev->num_mr);
}

static int metaroce_mr_pin_pages(struct metaroce_mr *mr)
{
	struct ib_umem *umem = mr->umem;
	struct sg_page_iter iter;
	unsigned long i = 0;

	mr->npages = ib_umem_num_pages(umem);
	mr->pages = kvcalloc(mr->npages, sizeof(*mr->pages), GFP_KERNEL);
	if (!mr->pages)
		return -ENOMEM;
	for_each_sgtable_page(&umem->sgt_append.sgt, &iter, 0) {
		if (i == mr->npages)
			break;
		mr->pages[i++] = sg_page_iter_page(&iter);
	}
	if (i != mr->npages) {
		kvfree(mr->pages);
		return -EFAULT;
	}
	mr->page_offset = ib_umem_offset(umem);
	return 0;
}

/* Keys and bookkeeping shared by user and DMA MRs; undone by dereg_mr. */
static int metaroce_mr_publish(struct metaroce_mr *mr, struct ib_pd *ib_pd,
			       int access, u64 iova, u64 length)
{
	mr->access = access;
	mr->ib_mr.iova = iova;
	mr->ib_mr.length = length;
	refcount_set(&mr->refs, 1);
	init_completion(&mr->released);
	/* ib_core sets ib_mr.device/pd after we return; lookups need them. */
	mr->ib_mr.device = ib_pd->device;
	mr->ib_mr.pd = ib_pd;
	return metaroce_mr_assign_key(mr);
}

struct ib_mr *metaroce_reg_user_mr(struct ib_pd *ib_pd, u64 start, u64 length,
				   u64 iova, int access, struct ib_udata *udata)
{
	struct metaroce_dev *mdev = to_mdev(ib_pd->device);
	struct metaroce_mr *mr;
	int err;

	/* No driver data is defined for REG_MR in this ABI version. */
	if (udata && udata->inlen &&
	    !ib_is_udata_cleared(udata, 0, udata->inlen))
		return ERR_PTR(-EINVAL);
	/*
	 * Optional flags (relaxed ordering, which perftest asks for) are
	 * hints a device may ignore (IB_UVERBS_ACCESS_OPTIONAL_RANGE): a
	 * software device has no PCIe ordering to relax.
	 */
	access &= ~IB_ACCESS_OPTIONAL;
	if (access & ~(IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE |
		       IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_ATOMIC))
		return ERR_PTR(-EOPNOTSUPP);
	/* IBTA: remote write and remote atomic need local write. */
	if ((access & (IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & IB_ACCESS_LOCAL_WRITE))
		return ERR_PTR(-EINVAL);
	if (!length || length > METAROCE_MAX_MR_SIZE)
		return ERR_PTR(-EINVAL);
	/* The page arithmetic below relies on iova and start sharing it. */
	if ((iova & ~PAGE_MASK) != (start & ~PAGE_MASK))
		return ERR_PTR(-EINVAL);
	mr = metaroce_mr_alloc(mdev);
	if (IS_ERR(mr))
		return ERR_CAST(mr);
	mr->umem = ib_umem_get(ib_pd->device, start, length, access);
	if (IS_ERR(mr->umem)) {
		err = PTR_ERR(mr->umem);
		goto err_free;
	}
	err = metaroce_mr_pin_pages(mr);
	if (err)
		goto err_umem;

	err = metaroce_mr_publish(mr, ib_pd, access, iova, length);
	if (err)
		goto err_pages;
	return &mr->ib_mr;

err_pages:
	kvfree(mr->pages);
err_umem:
	ib_umem_release(mr->umem);
err_free:
	metaroce_mr_free_unpublished(mdev, mr);
	return ERR_PTR(err);
}

struct ib_mr *metaroce_get_dma_mr(struct ib_pd *ib_pd, int access)
{
	struct metaroce_dev *mdev = to_mdev(ib_pd->device);
	struct metaroce_mr *mr;
	int err;

	if (access & ~(IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE |
		       IB_ACCESS_REMOTE_READ))
		return ERR_PTR(-EOPNOTSUPP);
	mr = metaroce_mr_alloc(mdev);
	if (IS_ERR(mr))
		return ERR_CAST(mr);
	err = metaroce_mr_publish(mr, ib_pd, access, 0, U64_MAX);
	if (err) {
		metaroce_mr_free_unpublished(mdev, mr);
		return ERR_PTR(err);
	}
	return &mr->ib_mr;
}

int metaroce_dereg_mr(struct ib_mr *ib_mr, struct ib_udata *udata)
{
	struct metaroce_mr *mr = to_mmr(ib_mr);

	xa_erase(&metaroce_mrs, metaroce_key_index(ib_mr->lkey));
	/* Lookups are short copies in softirq or process context. */
	metaroce_mr_put(mr);
	wait_for_completion(&mr->released);

	kvfree(mr->pages);
	ib_umem_release(mr->umem);
	atomic_dec(&to_mdev(ib_mr->device)->num_mr);
	/*
	 * A lookup may have loaded the pointer before xa_erase() and not yet
	 * tried its refcount_inc_not_zero(): free only after its RCU section.
	 */
	kfree_rcu(mr, rcu);
	return 0;
}

/*
 * Look up the MR of @key for an access of [@iova, @iova + @len) by a QP of
 * @pd.  @remote selects the rkey (peer) or lkey (local) check; @access are
 * the IB_ACCESS_* flags the access needs (0 for a local read).  Returns a
 * reference for metaroce_mr_put() or NULL.
 */
struct metaroce_mr *metaroce_mr_get(struct ib_pd *pd, u32 key, bool remote,
				    int access, u64 iova, u64 len)
{
	struct metaroce_mr *mr;

	rcu_read_lock();
	mr = xa_load(&metaroce_mrs, metaroce_key_index(key));
	if (mr && !refcount_inc_not_zero(&mr->refs))
		mr = NULL;
	rcu_read_unlock();
	if (!mr)
		return NULL;

	if ((remote ? mr->ib_mr.rkey : mr->ib_mr.lkey) != key ||
	    mr->ib_mr.pd != pd || (mr->access & access) != access ||
	    iova < mr->ib_mr.iova || len > mr->ib_mr.length ||
	    iova - mr->ib_mr.iova > mr->ib_mr.length - len) {
		metaroce_mr_put(mr);
		return NULL;
	}
	return mr;
}

void metaroce_mr_put(struct metaroce_mr *mr)
{
	if (refcount_dec_and_test(&mr->refs))
		complete(&mr->released);
}

/* Serialises every atomic of the device against every other (IBTA). */
static DEFINE_SPINLOCK(metaroce_atomic_lock);

/*
 * Compare-and-swap or fetch-and-add on the 8 bytes at @iova (8-byte
 * aligned, range checked by metaroce_mr_get()); *@orig gets the value
 * found.  IB_ATOMIC_HCA: atomic against the device's other atomics.
 */
int metaroce_mr_atomic(struct metaroce_mr *mr, u64 iova, bool cmp_swap,
		       u64 compare_add, u64 swap, u64 *orig)
{
	u64 off = iova - mr->ib_mr.iova + mr->page_offset;
	unsigned long idx = off >> PAGE_SHIFT;
	unsigned long flags;
	u64 *p;
	void *va;

	if ((iova & 7) || idx >= mr->npages)
		return -EINVAL;
	va = kmap_local_page(mr->pages[idx]);
	p = va + (off & ~PAGE_MASK);
	spin_lock_irqsave(&metaroce_atomic_lock, flags);
	*orig = *p;
	if (!cmp_swap)
		*p = *orig + compare_add;
	else if (*orig == compare_add)
		*p = swap;
	spin_unlock_irqrestore(&metaroce_atomic_lock, flags);
	kunmap_local(va);
	return 0;
}

/*
 * Copy @len bytes between @buf and the MR at @iova (range already checked
 * by metaroce_mr_get()).  @to_mr: buf -> MR.
 */
int metaroce_mr_copy(struct metaroce_mr *mr, u64 iova, void *buf, u32 len,
		     bool to_mr)
{
	u64 off = iova - mr->ib_mr.iova + mr->page_offset;

	if (!mr->umem) {
		/* A DMA MR: @iova is a kernel virtual address. */
		void *va = (void *)(uintptr_t)iova;

		if (to_mr)
			memcpy(va, buf, len);
		else
			memcpy(buf, va, len);
		return 0;
	}
	while (len) {
		unsigned long idx = off >> PAGE_SHIFT;
		u32 in_page = off & ~PAGE_MASK;
		u32 n = min_t(u32, len, PAGE_SIZE - in_page);
		void *va;

		if (WARN_ON_ONCE(idx >= mr->npages))
			return -EFAULT;
		va = kmap_local_page(mr->pages[idx]);
		if (to_mr)
			memcpy(va + in_page, buf, n);
		else
			memcpy(buf, va + in_page, n);
		kunmap_local(va);
		buf += n;
		off += n;
		len -= n;
	}
	return 0;
}
