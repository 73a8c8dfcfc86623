-- Large V and P: the mapping is shortened; P not dividing V is pointed out.
CREATE TABLE kplex.wide TBLPROPERTIES ('kplex.virtual_partitions' = '120', 'kplex.physical_partitions' = '12');
CREATE TABLE kplex.uneven TBLPROPERTIES ('kplex.virtual_partitions' = '10', 'kplex.physical_partitions' = '4');
