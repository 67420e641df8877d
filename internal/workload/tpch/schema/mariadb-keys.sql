-- The usual indexes on the foreign keys and on the date columns the queries
-- filter on (MariaDB's optimizer does not read foreign keys, so none are
-- declared), then every table is analyzed.
create index n_regionkey on nation (n_regionkey);
create index s_nationkey on supplier (s_nationkey);
create index c_nationkey on customer (c_nationkey);
create index ps_suppkey on partsupp (ps_suppkey);
create index o_custkey on orders (o_custkey);
create index o_orderdate on orders (o_orderdate);
create index l_partkey_suppkey on lineitem (l_partkey, l_suppkey);
create index l_suppkey on lineitem (l_suppkey);
create index l_shipdate on lineitem (l_shipdate);
analyze table region, nation, supplier, customer, part, partsupp, orders, lineitem;
